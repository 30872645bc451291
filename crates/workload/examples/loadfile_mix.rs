//! Derives a disk-mix script from a dbench load file: how often each operation occurs
//! (per 10,000 operations), the read and write sizes, how many reads and writes are not
//! where the previous one on the same handle ended (a seek), and the bytes per operation.
//! `crates/workload/profiles/netbench-disk-mix.toml` cites its output for
//! `/usr/share/dbench/client.txt`.
//!
//! ```sh
//! cargo run -p peakhour-workload --example loadfile_mix -- /usr/share/dbench/client.txt
//! ```

use std::collections::{BTreeMap, HashMap};

use peakhour_workload::files::{LoadOp, parse_loadfile};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/usr/share/dbench/client.txt".to_owned());
    let text = std::fs::read_to_string(&path)?;
    let mut ops: BTreeMap<&str, u64> = BTreeMap::new();
    let mut reads: BTreeMap<u32, u64> = BTreeMap::new();
    let mut writes: BTreeMap<u32, u64> = BTreeMap::new();
    let mut position: HashMap<i64, u64> = HashMap::new();
    let (mut total, mut bytes, mut seeks) = (0u64, 0u64, 0u64);
    for line in parse_loadfile(&text) {
        let line = line?;
        total += 1;
        *ops.entry(line.op.name()).or_default() += 1;
        let mut io = |fnum: i64, offset: u64, size: u32, sizes: &mut BTreeMap<u32, u64>| {
            *sizes.entry(size).or_default() += 1;
            bytes += u64::from(size);
            if position.insert(fnum, offset + u64::from(size)) != Some(offset) && offset != 0 {
                seeks += 1;
            }
        };
        match line.op {
            LoadOp::ReadX {
                fnum, offset, size, ..
            } => io(fnum, offset, size, &mut reads),
            LoadOp::WriteX {
                fnum, offset, size, ..
            } => io(fnum, offset, size, &mut writes),
            LoadOp::NtCreateX { fnum, .. } => {
                position.insert(fnum, 0);
            }
            _ => {}
        }
    }
    let per_10k = |n: u64| n as f64 * 10_000.0 / total as f64;
    println!("{path}: {total} operations, {bytes} bytes read and written");
    println!("bytes per operation: {:.0}", bytes as f64 / total as f64);
    for (name, n) in &ops {
        println!("{name:<24} {n:>8}  {:>7.1} per 10,000", per_10k(*n));
    }
    println!(
        "{:<24} {seeks:>8}  {:>7.1} per 10,000 (reads and writes not at the previous end, nor at 0)",
        "seek",
        per_10k(seeks)
    );
    for (what, sizes) in [("ReadX", &reads), ("WriteX", &writes)] {
        let mut by_count: Vec<_> = sizes.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        println!("{what} sizes (bytes: count, per 10,000 operations):");
        for (size, n) in by_count.iter().take(8) {
            println!("  {size:>6}: {n:>7}  {:>6.1}", per_10k(**n));
        }
        let rest: u64 = by_count.iter().skip(8).map(|(_, n)| **n).sum();
        let rest_bytes: u64 = by_count
            .iter()
            .skip(8)
            .map(|(s, n)| u64::from(**s) * **n)
            .sum();
        if rest > 0 {
            println!(
                "  other: {rest:>7}  {:>6.1}, {:.0} bytes on average",
                per_10k(rest),
                rest_bytes as f64 / rest as f64
            );
        }
    }
    Ok(())
}

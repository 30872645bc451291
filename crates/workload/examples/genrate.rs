//! Prints how many messages per second the generator makes from the mmb-medium mix.
//!
//! `cargo run --release -p peakhour-workload --example genrate`

use std::time::Instant;

use peakhour_workload::{MessageGenerator, MessageSpec, Overrides, Plan, builtin};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let profile = builtin("mmb-medium")?.profile()?;
    let plan = Plan::resolve(&profile, &Overrides::default())?;
    let generator = MessageGenerator::new(plan.seed());
    let to = vec![plan.address(1), plan.address(2), plan.list_address(0)];
    let from = plan.address(0);
    let n = 200_000u64;
    let mut buf = Vec::with_capacity(128 * 1024);
    let mut bytes = 0usize;
    let start = Instant::now();
    for i in 0..n {
        let choice = plan.send_choice(0, i);
        let id = format!("s0.{i}");
        buf.clear();
        generator.write(
            &MessageSpec {
                run_id: "bench",
                id: &id,
                from: &from,
                to: &to,
                date: "Tue, 04 Mar 2025 09:15:00 +0000",
                kind: &plan.mix()[choice.mix],
            },
            &mut buf,
        );
        bytes += buf.len();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{n} messages, {:.1} MB in {secs:.2} s: {:.0} messages/s, {:.2} us/message (one core, incl. send_choice)",
        bytes as f64 / 1e6,
        n as f64 / secs,
        secs * 1e6 / n as f64
    );
    Ok(())
}

//! `/proc` files kept open between samples and read again from their start.
//!
//! procfs makes a file's text anew at every read from offset 0, so a file
//! kept open gives the values of the moment, as a fresh open would. Keeping
//! it saves the path lookup, open and close, which are about half of what
//! reading a small `/proc` file costs (`/proc/PID/stat`: 10 µs opened each
//! time, 5 µs kept; docs/PERFORMANCE.md, "Fourth round"). A file under
//! `/proc/PID/` belongs to its process, not to the number: once that process
//! has exited, reading it fails (`ESRCH`) even when the number has been
//! given to another, so a kept file never reads someone else's values; the
//! path is then opened again.
//!
//! Only the real `/proc` is kept open (a test's fake one is made of plain
//! files, which a test may replace), and never more files than a sixteenth of
//! the process's descriptor limit: the load's connections need the rest.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt as _;
use std::path::Path;

/// Reads `file` from offset 0 to its end into `bytes` (reused), as text.
/// Plain reads: no size probe (`read_to_string` asks for the size and
/// position first, two more system calls that `/proc` answers with 0).
pub(crate) fn read_from_start<'a>(file: &File, bytes: &'a mut Vec<u8>) -> io::Result<&'a str> {
    let len = fill(file, bytes)?;
    text(&bytes[..len])
}

/// Reads `file` from offset 0 to its end into `bytes`; returns the length.
fn fill(file: &File, bytes: &mut Vec<u8>) -> io::Result<usize> {
    if bytes.len() < 4096 {
        bytes.resize(4096, 0);
    }
    let mut filled = 0;
    loop {
        if filled == bytes.len() {
            bytes.resize(filled * 2, 0);
        }
        match file.read_at(&mut bytes[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

fn text(bytes: &[u8]) -> io::Result<&str> {
    std::str::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Opens `path` and reads it whole.
pub(crate) fn read_path<'a>(path: &Path, bytes: &'a mut Vec<u8>) -> io::Result<&'a str> {
    read_from_start(&File::open(path)?, bytes)
}

/// The per-process files a sample reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PidFile {
    Stat,
    Status,
    Io,
}

impl PidFile {
    fn name(self) -> &'static str {
        match self {
            PidFile::Stat => "stat",
            PidFile::Status => "status",
            PidFile::Io => "io",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// One process's kept files, and the reading that last listed it.
#[derive(Debug, Default)]
struct KeptProcess {
    files: [Option<File>; 3],
    seen: u64,
}

/// Files kept open under a procfs root: the machine-wide ones by name and
/// each process's by PID.
#[derive(Debug)]
pub(crate) struct KeptFiles {
    /// `None`: open each file every time (not the real `/proc`).
    limit: Option<usize>,
    open: usize,
    named: HashMap<&'static str, File>,
    processes: HashMap<u32, KeptProcess>,
    reading: u64,
}

/// A sixteenth of the soft descriptor limit, at most 4,096 files.
fn descriptor_share() -> usize {
    let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map(|(soft, _)| soft)
        .unwrap_or(1024);
    usize::try_from(soft / 16).unwrap_or(usize::MAX).min(4096)
}

impl KeptFiles {
    /// Keeps files open under `proc_root` when it is this machine's `/proc`.
    pub(crate) fn new(proc_root: &Path) -> Self {
        let limit = (proc_root == Path::new("/proc")).then(descriptor_share);
        Self {
            limit,
            open: 0,
            named: HashMap::new(),
            processes: HashMap::new(),
            reading: 0,
        }
    }

    fn room(&self) -> bool {
        self.limit.is_some_and(|limit| self.open < limit)
    }

    /// Reads `root/rel` (`stat`, `pressure/io` ...), kept open when allowed.
    pub(crate) fn read_named<'a>(
        &mut self,
        root: &Path,
        rel: &'static str,
        bytes: &'a mut Vec<u8>,
    ) -> io::Result<&'a str> {
        if let Some(file) = self.named.get(rel) {
            if let Ok(len) = fill(file, bytes) {
                return text(&bytes[..len]);
            }
            self.named.remove(rel);
            self.open -= 1;
        }
        let file = File::open(root.join(rel))?;
        let len = fill(&file, bytes)?;
        if self.room() {
            self.named.insert(rel, file);
            self.open += 1;
        }
        text(&bytes[..len])
    }

    /// Starts a reading of the processes: the ones it does not read are
    /// forgotten at [`KeptFiles::end_reading`].
    pub(crate) fn begin_reading(&mut self) {
        self.reading += 1;
    }

    /// Closes the files of the processes this reading did not list.
    pub(crate) fn end_reading(&mut self) {
        let reading = self.reading;
        let mut closed = 0;
        self.processes.retain(|_, p| {
            let keep = p.seen == reading;
            if !keep {
                closed += p.files.iter().flatten().count();
            }
            keep
        });
        self.open -= closed;
    }

    /// Reads `root/PID/file`: through the file kept for this process if it
    /// still answers, else opened again (and kept, when there is room).
    pub(crate) fn read_pid<'a>(
        &mut self,
        root: &Path,
        pid: u32,
        which: PidFile,
        bytes: &'a mut Vec<u8>,
    ) -> io::Result<&'a str> {
        let reading = self.reading;
        let room = self.room();
        let kept = match self.processes.get_mut(&pid) {
            Some(kept) => Some(kept),
            None if room => Some(self.processes.entry(pid).or_default()),
            None => None,
        };
        let Some(kept) = kept else {
            return read_path(&root.join(pid.to_string()).join(which.name()), bytes);
        };
        kept.seen = reading;
        let slot = &mut kept.files[which.slot()];
        if let Some(file) = slot {
            if let Ok(len) = fill(file, bytes) {
                return text(&bytes[..len]);
            }
            // Exited (perhaps its number is another's now): open the path again.
            *slot = None;
            self.open -= 1;
        }
        let file = File::open(root.join(pid.to_string()).join(which.name()))?;
        let len = fill(&file, bytes)?;
        if self.open < self.limit.unwrap_or(0) {
            *slot = Some(file);
            self.open += 1;
        }
        text(&bytes[..len])
    }

    /// Files open now (for tests).
    #[cfg(test)]
    fn open_files(&self) -> usize {
        self.open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user_ticks(stat: &str) -> u64 {
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        after_name.split(' ').nth(11).unwrap().parse().unwrap()
    }

    #[test]
    fn a_kept_file_reads_the_values_of_the_moment() {
        let root = Path::new("/proc");
        let mut kept = KeptFiles::new(root);
        let mut bytes = Vec::new();
        let me = std::process::id();
        kept.begin_reading();
        let before = user_ticks(kept.read_pid(root, me, PidFile::Stat, &mut bytes).unwrap());
        assert_eq!(kept.open_files(), 1);
        // Burn CPU until the kernel's tick counter moves (bounded).
        let mut after = before;
        for _ in 0..200 {
            let mut x = 0u64;
            for i in 0..2_000_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            std::hint::black_box(x);
            after = user_ticks(kept.read_pid(root, me, PidFile::Stat, &mut bytes).unwrap());
            if after > before {
                break;
            }
        }
        assert!(
            after > before,
            "utime {before} -> {after} through the kept file"
        );
        assert_eq!(kept.open_files(), 1, "read again through the same file");
        let uptime = kept
            .read_named(root, "uptime", &mut bytes)
            .unwrap()
            .to_owned();
        assert!(uptime.ends_with('\n') && uptime.split_whitespace().count() == 2);
        assert_eq!(kept.open_files(), 2);
    }

    #[test]
    fn an_exited_process_is_not_read_through_its_kept_file() {
        let root = Path::new("/proc");
        let mut kept = KeptFiles::new(root);
        let mut bytes = Vec::new();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id();
        kept.begin_reading();
        assert!(
            kept.read_pid(root, pid, PidFile::Stat, &mut bytes)
                .unwrap()
                .starts_with(&format!("{pid} (sleep)"))
        );
        assert!(
            kept.read_pid(root, pid, PidFile::Status, &mut bytes)
                .is_ok()
        );
        assert_eq!(kept.open_files(), 2);
        child.kill().unwrap();
        child.wait().unwrap();
        // Reaped: the kept file answers ESRCH and the path is gone.
        assert!(kept.read_pid(root, pid, PidFile::Stat, &mut bytes).is_err());
        assert_eq!(kept.open_files(), 1, "the stat file was closed");
        kept.begin_reading();
        kept.end_reading();
        assert_eq!(
            kept.open_files(),
            0,
            "a process not listed has its files closed"
        );
    }

    #[test]
    fn files_are_kept_only_under_the_real_proc_and_within_the_limit() {
        let mut bytes = Vec::new();
        let fake = tempfile::tempdir().unwrap();
        std::fs::write(fake.path().join("uptime"), "1.00 2.00\n").unwrap();
        let mut opened_each_time = KeptFiles::new(fake.path());
        assert_eq!(
            opened_each_time
                .read_named(fake.path(), "uptime", &mut bytes)
                .unwrap(),
            "1.00 2.00\n"
        );
        assert_eq!(opened_each_time.open_files(), 0);
        std::fs::write(fake.path().join("uptime"), "3.00 4.00\n").unwrap();
        assert_eq!(
            opened_each_time
                .read_named(fake.path(), "uptime", &mut bytes)
                .unwrap(),
            "3.00 4.00\n"
        );

        let root = Path::new("/proc");
        let mut kept = KeptFiles::new(root);
        kept.limit = Some(2);
        for rel in ["uptime", "loadavg", "meminfo"] {
            assert!(!kept.read_named(root, rel, &mut bytes).unwrap().is_empty());
        }
        assert_eq!(kept.open_files(), 2);
        kept.begin_reading();
        assert!(
            kept.read_pid(root, std::process::id(), PidFile::Io, &mut bytes)
                .is_ok()
        );
        assert_eq!(kept.open_files(), 2);
        assert!(descriptor_share() >= 1);
    }

    #[test]
    fn a_long_file_is_read_whole() {
        let mut bytes = Vec::new();
        let text = "x".repeat(10_000);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("long"), &text).unwrap();
        assert_eq!(
            read_path(&dir.path().join("long"), &mut bytes).unwrap(),
            text
        );
    }
}

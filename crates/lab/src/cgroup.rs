//! Shaped labs: a Linux cgroup of the lab's own that caps the CPU and memory
//! of every server process and accounts for them.
//!
//! The group is made as a child of the cgroup `lab up` itself runs in, in
//! each hierarchy, so that limits set above it (a container, a systemd slice)
//! still apply. Both layouts are handled, detected at run time:
//!
//! * **cgroup v1**, controllers mounted separately (`/sys/fs/cgroup/cpu`,
//!   `cpuacct`, `memory`) or together: `cpu.cfs_quota_us` over
//!   `cpu.cfs_period_us`, `memory.limit_in_bytes`, and `cpuacct.usage`.
//! * **cgroup v2** (one unified tree): `cpu.max`, `memory.max`, and `cpu.stat`.
//!
//! Each master joins the group before it executes the server (a shell writes
//! its own PID into `cgroup.procs`, then `exec`s), so every process the server
//! ever forks is born inside the group.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{LabError, Limits};

/// The CFS period the CPU cap is expressed over, in microseconds (the
/// kernel's default). A 0.5-core cap is 50 ms of CPU per 100 ms.
const CFS_PERIOD_US: u64 = 100_000;

/// How much a capped group weighs against its neighbours, as a multiple of
/// one ordinary process (v1 `cpu.shares` 1024, v2 `cpu.weight` 100). Under v1
/// the whole group competes as one process would, so on a busy machine (a
/// compile, the load generator's own threads) servers capped at half a core
/// got a fifth of one, and the neighbours, not the cap, set their speed.
/// Weighing the group more lets it reach its cap first; the cap still bounds it.
const CAPPED_WEIGHT: u64 = 10;

/// Which cgroup layout the machine has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    /// One hierarchy per controller (or group of controllers).
    V1,
    /// The unified hierarchy.
    V2,
}

impl std::fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CgroupVersion::V1 => "cgroup v1",
            CgroupVersion::V2 => "cgroup v2",
        })
    }
}

/// Where a lab's group lives. Under v1 each controller has its own directory
/// (two may coincide when co-mounted); under v2 all three are the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LabCgroup {
    pub(crate) version: CgroupVersion,
    pub(crate) cpu: PathBuf,
    pub(crate) cpuacct: PathBuf,
    pub(crate) memory: PathBuf,
}

/// A lab's cgroup as `lab status` reports it, with the files a monitor reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupStatus {
    /// `v1` or `v2`.
    pub version: CgroupVersion,
    /// The group's name, made from the lab directory's path.
    pub name: String,
    /// Every directory of the group: one per hierarchy under v1, one under v2.
    pub dirs: Vec<String>,
    /// The group's CPU time: `cpuacct.usage` in nanoseconds (v1), or
    /// `cpu.stat` whose `usage_usec` line is in microseconds (v2).
    pub cpu_usage_file: String,
    /// The group's memory in use, in bytes: `memory.usage_in_bytes` (v1) or
    /// `memory.current` (v2).
    pub memory_usage_file: String,
    /// Throttling counts: `cpu.stat` (`nr_throttled`, and `throttled_time` in
    /// ns under v1 or `throttled_usec` under v2).
    pub cpu_stat_file: String,
}

impl CgroupStatus {
    /// CPU time the group's processes have used, in nanoseconds.
    pub fn cpu_usage_ns(&self) -> Option<u64> {
        let text = fs::read_to_string(&self.cpu_usage_file).ok()?;
        match self.version {
            CgroupVersion::V1 => text.trim().parse().ok(),
            CgroupVersion::V2 => stat_field(&text, "usage_usec").map(|us| us.saturating_mul(1000)),
        }
    }

    /// Memory the group uses now, in bytes (page cache included).
    pub fn memory_usage_bytes(&self) -> Option<u64> {
        fs::read_to_string(&self.memory_usage_file)
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// How many CFS periods the group was throttled in (its CPU cap bit).
    pub fn throttled_periods(&self) -> Option<u64> {
        stat_field(
            &fs::read_to_string(&self.cpu_stat_file).ok()?,
            "nr_throttled",
        )
    }
}

/// The value of `key` in a flat-keyed file (`key value` per line).
fn stat_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok())?
    })
}

/// The group name for the lab in `dir`: readable from the path, made unique
/// by a hash of it (`/a-b` and `/a/b` read the same).
pub(crate) fn group_name(dir: &Path) -> String {
    let path = dir.to_string_lossy();
    let mut readable: String = path
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    readable = readable.trim_matches('-').to_owned();
    while readable.contains("--") {
        readable = readable.replace("--", "-");
    }
    readable.truncate(100);
    // FNV-1a: stable across builds and platforms, unlike std's hasher.
    let hash = path.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("peakhour-lab-{readable}-{hash:08x}")
}

/// One cgroup mount from `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CgroupMount {
    /// The path inside the hierarchy that is mounted (usually `/`).
    root: String,
    mount_point: PathBuf,
    /// v1 controllers; empty for v2.
    controllers: Vec<String>,
    v2: bool,
}

fn parse_mountinfo(text: &str) -> Vec<CgroupMount> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let mut tail = after.split(' ');
            let fstype = tail.next()?;
            let _source = tail.next()?;
            let options = tail.next().unwrap_or_default();
            let (root, mount_point) = (fields.get(3)?, fields.get(4)?);
            let v2 = match fstype {
                "cgroup" => false,
                "cgroup2" => true,
                _ => return None,
            };
            Some(CgroupMount {
                root: unescape(root),
                mount_point: PathBuf::from(unescape(mount_point)),
                controllers: if v2 {
                    Vec::new()
                } else {
                    options.split(',').map(str::to_owned).collect()
                },
                v2,
            })
        })
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape(field: &str) -> String {
    field
        .replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// This process's cgroup in each hierarchy, from `/proc/self/cgroup`: for v1
/// (controllers, path), and for v2 the controllers are empty.
fn parse_own_cgroups(text: &str) -> Vec<(Vec<String>, String)> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            let controllers = if controllers.is_empty() {
                Vec::new()
            } else {
                controllers.split(',').map(str::to_owned).collect()
            };
            Some((controllers, path.to_owned()))
        })
        .collect()
}

/// The directory for a child group `name` of our own cgroup in `mount`.
fn child_dir(mount: &CgroupMount, own: &str, name: &str) -> PathBuf {
    // Our path is relative to the hierarchy's root; the mount shows `root`.
    let relative = own
        .strip_prefix(mount.root.trim_end_matches('/'))
        .unwrap_or(own)
        .trim_start_matches('/');
    mount.mount_point.join(relative).join(name)
}

impl LabCgroup {
    /// Where the group `name` goes on this machine.
    pub(crate) fn locate(name: &str) -> Result<LabCgroup, LabError> {
        let read = |path: &str| {
            fs::read_to_string(path)
                .map_err(|e| LabError::Cgroup(format!("cannot read {path}: {e}")))
        };
        locate_in(
            &read("/proc/self/mountinfo")?,
            &read("/proc/self/cgroup")?,
            name,
        )
        .map_err(LabError::Cgroup)
    }

    /// The group's distinct directories.
    pub(crate) fn dirs(&self) -> Vec<&Path> {
        let mut dirs: Vec<&Path> = Vec::new();
        for dir in [&self.cpu, &self.cpuacct, &self.memory] {
            if !dirs.contains(&dir.as_path()) {
                dirs.push(dir);
            }
        }
        dirs
    }

    /// The `cgroup.procs` files a process writes its PID to, to join the group.
    pub(crate) fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs().iter().map(|d| d.join("cgroup.procs")).collect()
    }

    /// Creates the group (or reuses an empty one left by a crash) and sets
    /// the limits; an absent limit is set to unlimited.
    pub(crate) fn create(&self, limits: &Limits) -> Result<(), LabError> {
        if self.version == CgroupVersion::V2 {
            enable_v2_controllers(&self.cpu)?;
        }
        for dir in self.dirs() {
            match fs::create_dir(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(cgroup_error(dir, "cannot create the group", &e)),
            }
        }
        let quota = limits
            .millicpus
            .map(|m| u64::from(m) * CFS_PERIOD_US / 1000);
        match self.version {
            CgroupVersion::V1 => {
                let shares = 1024 * if quota.is_some() { CAPPED_WEIGHT } else { 1 };
                write(&self.cpu.join("cpu.shares"), &shares.to_string())?;
                write(
                    &self.cpu.join("cpu.cfs_period_us"),
                    &CFS_PERIOD_US.to_string(),
                )?;
                let quota = quota.map_or_else(|| "-1".to_owned(), |q| q.to_string());
                write(&self.cpu.join("cpu.cfs_quota_us"), &quota)?;
                let memory = limits
                    .memory_bytes
                    .map_or_else(|| "-1".to_owned(), |b| b.to_string());
                write(&self.memory.join("memory.limit_in_bytes"), &memory)
            }
            CgroupVersion::V2 => {
                let weight = 100 * if quota.is_some() { CAPPED_WEIGHT } else { 1 };
                write(&self.cpu.join("cpu.weight"), &weight.to_string())?;
                let quota = quota.map_or_else(|| "max".to_owned(), |q| q.to_string());
                write(
                    &self.cpu.join("cpu.max"),
                    &format!("{quota} {CFS_PERIOD_US}"),
                )?;
                let memory = limits
                    .memory_bytes
                    .map_or_else(|| "max".to_owned(), |b| b.to_string());
                write(&self.memory.join("memory.max"), &memory)
            }
        }
    }

    /// Removes the group's directories. The kernel refuses while a process
    /// is still in the group, which is reported.
    pub(crate) fn remove(&self) -> Result<(), LabError> {
        for dir in self.dirs() {
            match fs::remove_dir(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(cgroup_error(dir, "cannot remove the group", &e)),
            }
        }
        Ok(())
    }

    /// True if this is the group `name` in a cgroup filesystem: a tampered
    /// state file cannot make `down` remove any other directory.
    pub(crate) fn is_named(&self, name: &str) -> bool {
        self.dirs().iter().all(|dir| {
            dir.file_name().is_some_and(|n| n == name)
                && dir.starts_with("/sys/fs/cgroup")
                && !dir
                    .components()
                    .any(|c| c == std::path::Component::ParentDir)
        })
    }

    /// What `lab status` shows.
    pub(crate) fn status(&self, name: &str) -> CgroupStatus {
        let file = |dir: &Path, name: &str| dir.join(name).display().to_string();
        let (cpu_usage, memory_usage) = match self.version {
            CgroupVersion::V1 => (
                file(&self.cpuacct, "cpuacct.usage"),
                file(&self.memory, "memory.usage_in_bytes"),
            ),
            CgroupVersion::V2 => (
                file(&self.cpu, "cpu.stat"),
                file(&self.memory, "memory.current"),
            ),
        };
        CgroupStatus {
            version: self.version,
            name: name.to_owned(),
            dirs: self
                .dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect(),
            cpu_usage_file: cpu_usage,
            memory_usage_file: memory_usage,
            cpu_stat_file: file(&self.cpu, "cpu.stat"),
        }
    }
}

/// Chooses v1 when the cpu, cpuacct and memory controllers are each mounted
/// as v1, and the unified hierarchy otherwise.
fn locate_in(mountinfo: &str, own_cgroups: &str, name: &str) -> Result<LabCgroup, String> {
    let mounts = parse_mountinfo(mountinfo);
    let own = parse_own_cgroups(own_cgroups);
    let v1_dir = |controller: &str| {
        let mount = mounts
            .iter()
            .find(|m| !m.v2 && m.controllers.iter().any(|c| c == controller))?;
        let path = own
            .iter()
            .find(|(controllers, _)| controllers.iter().any(|c| c == controller))
            .map_or("/", |(_, path)| path.as_str());
        Some(child_dir(mount, path, name))
    };
    if let (Some(cpu), Some(cpuacct), Some(memory)) =
        (v1_dir("cpu"), v1_dir("cpuacct"), v1_dir("memory"))
    {
        return Ok(LabCgroup {
            version: CgroupVersion::V1,
            cpu,
            cpuacct,
            memory,
        });
    }
    let Some(unified) = mounts.iter().find(|m| m.v2) else {
        return Err(
            "this machine mounts no cgroup hierarchy with the cpu, cpuacct and memory \
             controllers (v1) and no unified hierarchy (v2)"
                .into(),
        );
    };
    let path = own
        .iter()
        .find(|(controllers, _)| controllers.is_empty())
        .map_or("/", |(_, path)| path.as_str());
    let dir = child_dir(unified, path, name);
    Ok(LabCgroup {
        version: CgroupVersion::V2,
        cpu: dir.clone(),
        cpuacct: dir.clone(),
        memory: dir,
    })
}

/// Under v2 a group's controllers must be enabled in its parent's
/// `cgroup.subtree_control`. The kernel refuses that for a group that holds
/// processes itself (other than the root), which is said plainly.
fn enable_v2_controllers(group: &Path) -> Result<(), LabError> {
    let Some(parent) = group.parent() else {
        return Err(LabError::Cgroup(format!(
            "{} has no parent",
            group.display()
        )));
    };
    let available = fs::read_to_string(parent.join("cgroup.controllers")).unwrap_or_default();
    for needed in ["cpu", "memory"] {
        if !available.split_whitespace().any(|c| c == needed) {
            return Err(LabError::Cgroup(format!(
                "the {needed} controller is not available in {} (cgroup.controllers: {:?}); \
                 it must be delegated to this cgroup",
                parent.display(),
                available.trim()
            )));
        }
    }
    let control = parent.join("cgroup.subtree_control");
    let enabled = fs::read_to_string(&control).unwrap_or_default();
    let enabled: Vec<&str> = enabled.split_whitespace().collect();
    if enabled.contains(&"cpu") && enabled.contains(&"memory") {
        return Ok(());
    }
    fs::write(&control, "+cpu +memory").map_err(|e| {
        LabError::Cgroup(format!(
            "cannot enable the cpu and memory controllers in {} ({e}). Under cgroup v2 a \
             group that holds processes cannot hand controllers to its children; start \
             peakhour from a cgroup of its own, e.g. `systemd-run --scope -p Delegate=yes \
             peakhour lab up ...`, or from the root cgroup",
            control.display()
        ))
    })
}

fn write(path: &Path, value: &str) -> Result<(), LabError> {
    fs::write(path, value).map_err(|e| cgroup_error(path, &format!("cannot write {value:?}"), &e))
}

fn cgroup_error(path: &Path, what: &str, error: &std::io::Error) -> LabError {
    LabError::Cgroup(format!("{what} ({}): {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's layout: v1 controllers mounted apart, a hybrid v2
    /// mount without controllers, and peakhour in a nested memory group.
    const HYBRID_MOUNTS: &str = "\
30 25 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
33 30 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
34 30 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const HYBRID_OWN: &str = "\
4:memory:/process_api/abc
2:cpuacct:/
1:cpu:/
0::/
";

    #[test]
    fn v1_groups_nest_under_our_own_in_each_hierarchy() {
        let group = locate_in(HYBRID_MOUNTS, HYBRID_OWN, "peakhour-lab-x").unwrap();
        assert_eq!(group.version, CgroupVersion::V1);
        assert_eq!(group.cpu, Path::new("/sys/fs/cgroup/cpu/peakhour-lab-x"));
        assert_eq!(
            group.cpuacct,
            Path::new("/sys/fs/cgroup/cpuacct/peakhour-lab-x")
        );
        assert_eq!(
            group.memory,
            Path::new("/sys/fs/cgroup/memory/process_api/abc/peakhour-lab-x")
        );
        assert_eq!(group.procs_files().len(), 3);
        assert!(group.is_named("peakhour-lab-x"));
        assert!(!group.is_named("peakhour-lab-y"));
        let status = group.status("peakhour-lab-x");
        assert_eq!(
            status.cpu_usage_file,
            "/sys/fs/cgroup/cpuacct/peakhour-lab-x/cpuacct.usage"
        );
    }

    #[test]
    fn comounted_cpu_and_cpuacct_share_one_directory() {
        let mounts = "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
                      33 30 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        let own = "3:cpu,cpuacct:/user.slice\n2:memory:/user.slice\n";
        let group = locate_in(mounts, own, "g").unwrap();
        assert_eq!(group.cpu, group.cpuacct);
        assert_eq!(
            group.cpu,
            Path::new("/sys/fs/cgroup/cpu,cpuacct/user.slice/g")
        );
        assert_eq!(group.dirs().len(), 2);
    }

    #[test]
    fn a_unified_machine_gets_one_v2_group() {
        let mounts = "30 25 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        let own = "0::/system.slice/peakhour.scope\n";
        let group = locate_in(mounts, own, "g").unwrap();
        assert_eq!(group.version, CgroupVersion::V2);
        assert_eq!(
            group.memory,
            Path::new("/sys/fs/cgroup/system.slice/peakhour.scope/g")
        );
        assert_eq!(group.dirs().len(), 1);
        let status = group.status("g");
        assert!(status.cpu_usage_file.ends_with("/g/cpu.stat"));
        assert!(status.memory_usage_file.ends_with("/g/memory.current"));
    }

    #[test]
    fn a_mount_of_a_subtree_is_not_joined_twice() {
        // In a container the hierarchy's /docker/x is mounted at /sys/fs/cgroup/memory.
        let mounts = "33 30 0:30 /docker/x /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        let mount = &parse_mountinfo(mounts)[0];
        assert_eq!(
            child_dir(mount, "/docker/x/inner", "g"),
            Path::new("/sys/fs/cgroup/memory/inner/g")
        );
    }

    #[test]
    fn no_cgroups_is_an_error_that_says_so() {
        let error = locate_in("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n", "", "g").unwrap_err();
        assert!(error.contains("no cgroup hierarchy"), "{error}");
    }

    #[test]
    fn group_names_are_readable_and_unique() {
        let a = group_name(Path::new("/var/tmp/a-b"));
        let b = group_name(Path::new("/var/tmp/a/b"));
        assert!(a.starts_with("peakhour-lab-var-tmp-a-b-"), "{a}");
        assert_ne!(a, b);
        assert_eq!(a, group_name(Path::new("/var/tmp/a-b")));
        let long = group_name(&Path::new("/x").join("y".repeat(500)));
        assert!(long.len() < 130, "{long}");
    }

    #[test]
    fn stat_fields_are_read_by_name() {
        let text = "nr_periods 10\nnr_throttled 4\nthrottled_time 12345\n";
        assert_eq!(stat_field(text, "nr_throttled"), Some(4));
        assert_eq!(stat_field(text, "usage_usec"), None);
    }
}

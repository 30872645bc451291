//! The monitor beside a load: the load's result comes back with the
//! monitor's run, an idle baseline is sampled first and said, and a load
//! without a monitor source runs alone.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::time::Duration;

use peakhour_monitor::{BesideNote, MonitorThread, Sample, SampleFuture, Source, SystemSample};

/// A sample whose run queue counts the calls.
struct Counting(u32);

impl Source for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    fn sample(&mut self) -> SampleFuture<'_> {
        self.0 += 1;
        let n = self.0;
        Box::pin(async move {
            Ok(Sample {
                system: SystemSample {
                    run_queue: Some(f64::from(n)),
                    ..SystemSample::default()
                },
                ..Sample::default()
            })
        })
    }
}

/// The load's own runtime, as `peakhour run` has one beside the monitor's.
fn load_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn csv_file(dir: &tempfile::TempDir) -> std::fs::File {
    std::fs::File::create(dir.path().join("monitor.csv")).unwrap()
}

#[test]
fn a_load_runs_with_the_monitor_beside_it_after_the_baseline_it_announces() {
    let thread = MonitorThread::new().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let source: Box<dyn Source> = Box::new(Counting(0));
    let baseline = Duration::from_millis(30);
    let mut notes = Vec::new();
    let (result, monitor) = load_runtime().block_on(thread.beside(
        Some((source, csv_file(&tmp))),
        baseline,
        Duration::from_millis(10),
        async { 42 },
        &mut |note| notes.push(format!("{note:?}")),
    ));
    assert_eq!(result, 42);
    assert_eq!(notes, [format!("{:?}", BesideNote::Baseline(baseline))]);
    let monitor = monitor.expect("the monitor ran");
    assert_eq!(monitor.interval, Duration::from_millis(10));
    let report = monitor.report.unwrap();
    assert!(report.cost.samples >= 1, "the baseline was sampled");
    let header = std::fs::read_to_string(tmp.path().join("monitor.csv")).unwrap();
    assert!(header.starts_with("time_s,"), "{header}");
}

#[test]
fn without_a_source_the_load_runs_alone_and_nothing_is_said() {
    let thread = MonitorThread::new().unwrap();
    let mut notes = 0;
    let (result, monitor) = load_runtime().block_on(thread.beside(
        None,
        Duration::from_secs(3600),
        Duration::from_secs(1),
        async { "done" },
        &mut |_| notes += 1,
    ));
    assert_eq!(result, "done");
    assert!(monitor.is_none());
    assert_eq!(notes, 0, "no baseline is waited for without a monitor");
}

//! The Monitor runner with a scripted source and a paused clock: ticks
//! aligned to the origin, duration and stop, CSV rows, cost accounted.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use peakhour_monitor::{
    Monitor, MonitorConfig, MonitorError, Sample, SampleFuture, Source, SystemSample,
};
use tokio::time::Instant;

/// Gives a sample whose run queue counts the calls.
struct Counting(u32);

impl Source for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    fn sample(&mut self) -> SampleFuture<'_> {
        self.0 += 1;
        let n = self.0;
        Box::pin(async move {
            if n == 3 {
                return Err(MonitorError::Config("scripted failure".into()));
            }
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

/// A `Write` the test can read afterwards.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn samples_align_to_the_origin_and_stop_at_the_duration() {
    // The run started 0.25 s ago: ticks fall at 1, 2, 3 ... s of the run.
    let origin = Instant::now() - Duration::from_millis(250);
    let csv = Shared::default();
    let config = MonitorConfig {
        interval: Duration::from_secs(1),
        duration: Some(Duration::from_millis(4_900)),
        origin: Some(origin),
        ..MonitorConfig::default()
    };
    let monitor = Monitor::start(Counting(0), Some(csv.clone()), config).unwrap();
    let report = monitor.join().await.unwrap();
    // Calls: at 0.25 s (priming), 1, 2 (fails), 3, 4, 5 s of the run; the
    // deadline is at 0.25 + 4.9 = 5.15 s.
    assert_eq!(report.cost.samples, 6);
    assert_eq!(report.errors, 1);
    assert_eq!(
        report.last_error.as_deref(),
        Some("invalid monitor configuration: scripted failure")
    );
    assert_eq!(report.table.times(), &[0.25, 1.0, 3.0, 4.0, 5.0]);
    assert_eq!(
        report.table.column("run_queue").unwrap(),
        vec![1.0, 2.0, 4.0, 5.0, 6.0]
    );
    let text = String::from_utf8(csv.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("time_s,cpu_busy_pct,"), "{}", lines[0]);
    assert_eq!(lines.len(), 6);
    assert!(lines[1].starts_with("0.25,"));
    assert!(lines[5].starts_with("5,"));
    println!(
        "self-cost (scripted source): {:.1} µs per sample",
        report.cost.mean_sample_us()
    );
}

#[tokio::test(start_paused = true)]
async fn an_origin_in_the_future_gives_a_baseline_with_negative_times() {
    // The load starts in 2.5 s: ticks still fall on origin + k × 1 s, k < 0 first.
    let origin = Instant::now() + Duration::from_millis(2_500);
    let config = MonitorConfig {
        interval: Duration::from_secs(1),
        duration: Some(Duration::from_millis(4_700)),
        origin: Some(origin),
        ..MonitorConfig::default()
    };
    let monitor = Monitor::start(Counting(0), None::<Shared>, config).unwrap();
    let report = monitor.join().await.unwrap();
    // Priming at -2.5 s, then -2, -1 (the scripted failure), 0, 1, 2 s;
    // the deadline is at 2.2 s.
    assert_eq!(report.table.times(), &[-2.5, -2.0, 0.0, 1.0, 2.0]);
}

#[tokio::test(start_paused = true)]
async fn stop_handle_ends_the_monitor() {
    let monitor = Monitor::start(Counting(0), None::<Shared>, MonitorConfig::default()).unwrap();
    let stop = monitor.stop_handle();
    let mut latest = monitor.latest();
    latest.changed().await.unwrap();
    assert_eq!(
        latest.borrow().as_ref().unwrap().system.run_queue,
        Some(1.0)
    );
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    stop.stop();
    let report = monitor.join().await.unwrap();
    // Priming at 0 s and the tick at 1 s.
    assert_eq!(report.table.len(), 2);
}

#[test]
fn zero_interval_is_refused() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let config = MonitorConfig {
        interval: Duration::ZERO,
        ..MonitorConfig::default()
    };
    assert!(Monitor::start(Counting(0), None::<Shared>, config).is_err());
}

//! Signals, the one way for every command: SIGINT, SIGTERM and SIGHUP (a
//! closed terminal) all mean "stop, then write what was measured", and a
//! command stopped so exits with [`EXIT_INTERRUPTED`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context as _, bail};
use tokio::signal::unix::{Signal, SignalKind, signal};

/// Exit code of a command stopped by a signal: 128 + SIGINT, as shells report it.
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// The three stopping signals, watched from a tokio runtime.
struct StopSignals([Signal; 3]);

impl StopSignals {
    fn new() -> std::io::Result<Self> {
        let kinds = [
            SignalKind::interrupt(),
            SignalKind::terminate(),
            SignalKind::hangup(),
        ];
        Ok(Self([
            signal(kinds[0])?,
            signal(kinds[1])?,
            signal(kinds[2])?,
        ]))
    }

    async fn recv(&mut self) {
        let [int, term, hup] = &mut self.0;
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
    }
}

/// Waits for the first SIGINT, SIGTERM or SIGHUP (only SIGINT if the others
/// cannot be watched).
pub(crate) async fn wait_for_signal() {
    match StopSignals::new() {
        Ok(mut signals) => signals.recv().await,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Ends the process at once, on a second stopping signal: what is on disk
/// stays (every file is written whole or not at all, and a run's closed
/// intervals are already journaled).
pub(crate) fn exit_at_once() -> ! {
    eprintln!("\nsecond signal: exiting now; what was already written stays");
    std::process::exit(i32::from(EXIT_INTERRUPTED))
}

/// For a command without a runtime of its own (the sweep): signals watched on
/// a thread, a flag set by the first, and `on_signal` called on every one
/// (with `true` the first time).
pub(crate) struct Interrupt {
    flag: Arc<AtomicBool>,
}

impl Interrupt {
    pub(crate) fn install(on_signal: impl Fn(bool) + Send + 'static) -> anyhow::Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        let thread_flag = flag.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("peakhour-signals".into())
            .spawn(move || {
                let watch = || -> std::io::Result<_> {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?;
                    let signals = runtime.block_on(async { StopSignals::new() })?;
                    Ok((runtime, signals))
                };
                let (runtime, mut signals) = match watch() {
                    Ok(ready) => ready,
                    Err(e) => return drop(ready_tx.send(Err(e))),
                };
                let _ = ready_tx.send(Ok(()));
                runtime.block_on(async move {
                    loop {
                        signals.recv().await;
                        on_signal(!thread_flag.swap(true, Ordering::SeqCst));
                    }
                });
            })
            .context("cannot start the signal thread")?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Self { flag }),
            Ok(Err(e)) => bail!("cannot watch for SIGINT: {e}"),
            Err(_) => bail!("cannot watch for SIGINT"),
        }
    }

    pub(crate) fn interrupted(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

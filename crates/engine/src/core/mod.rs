//! The run core, the same for every load (mail users, file clients): the
//! [`Observer`] that watches a run, the [`RunRecorder`] every run feeds
//! first, and the loop that drives a [`Load`]'s tasks through the phases.
//! It knows no protocol: the sessions (`crate::sessions`) do.

pub(crate) mod meta;
pub(crate) mod observer;
pub(crate) mod recorder;
pub(crate) mod run_loop;

pub use observer::{Both, Observer, Phase, RunClock, SelfSample};
pub use recorder::{BYTES_READ, BYTES_WRITTEN, RunRecorder, UNMEASURED_OPERATIONS};
pub use run_loop::STOP_GRACE;
pub(crate) use run_loop::{Halt, Load, RunLoop, ScheduleProgress, TICK, Tasks, Tee, not_attempted};

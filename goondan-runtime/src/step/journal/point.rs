//! [`JournalPoint`]: the places the step loop writes its journal, and a hook that stops the
//! process at one of them, for crash tests.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A place where the step loop has just written to its journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JournalPoint {
    /// The Turn's input is written.
    AfterInput,
    /// A model answer is written.
    AfterModelAnswer,
    /// A Step's calls are admitted (handed to the executor).
    AfterAdmission,
    /// A call's start is written; its handler has not run yet.
    AfterStart,
    /// The start of a call that a code call's program makes is written (or, for a call that
    /// may run again, queued for the next write); its handler has not run yet.
    AfterInnerStart,
    /// The result of a call that a code call's program made is written.
    AfterInnerResult,
    /// A call's result is written.
    AfterResult,
    /// A call's result is `pending`, everything before is written, and the Turn waits for
    /// the call's completion (the model answered without calls meanwhile).
    WhilePending,
    /// The Turn's end is written.
    AfterTurnEnd,
}

impl JournalPoint {
    /// Every point, in the order a Turn reaches them.
    pub const ALL: [Self; 9] = [
        Self::AfterInput,
        Self::AfterModelAnswer,
        Self::AfterAdmission,
        Self::AfterStart,
        Self::AfterInnerStart,
        Self::AfterInnerResult,
        Self::AfterResult,
        Self::WhilePending,
        Self::AfterTurnEnd,
    ];

    /// The point's name: `after-input`, `after-start`, ...
    pub fn name(self) -> &'static str {
        match self {
            Self::AfterInput => "after-input",
            Self::AfterModelAnswer => "after-model-answer",
            Self::AfterAdmission => "after-admission",
            Self::AfterStart => "after-start",
            Self::AfterInnerStart => "after-inner-start",
            Self::AfterInnerResult => "after-inner-result",
            Self::AfterResult => "after-result",
            Self::WhilePending => "while-pending",
            Self::AfterTurnEnd => "after-turn-end",
        }
    }

    /// The point named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

struct Halt {
    point: JournalPoint,
    nth: usize,
    seen: AtomicUsize,
}

static HALT: OnceLock<Halt> = OnceLock::new();

/// For crash tests: the `nth` time (from 1) the step loop reaches `point` in this process, it
/// writes `goondan: halted at {point}` to standard error and the thread that reached it stops
/// there for good (on a current-thread runtime, the whole agent), so that the test can kill
/// the process (SIGKILL) exactly at that point. Set once per process; later calls are
/// ignored. Nothing but a test should call it.
pub fn halt_at(point: JournalPoint, nth: usize) {
    let _ = HALT.set(Halt {
        point,
        nth: nth.max(1),
        seen: AtomicUsize::new(0),
    });
}

/// Marks `point` as reached: halts there when [`halt_at`] asked for it.
pub(crate) fn reached(point: JournalPoint) {
    let Some(halt) = HALT.get() else {
        return;
    };
    if halt.point != point || halt.seen.fetch_add(1, Ordering::SeqCst) + 1 != halt.nth {
        return;
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "goondan: halted at {}", point.name());
    let _ = err.flush();
    loop {
        std::thread::park();
    }
}

use std::sync::atomic::{AtomicU64, Ordering};

use goondan_runtime::prelude::*;

/// A counter that keeps its state between calls.
pub struct Counter {
    start: u64,
    calls: AtomicU64,
}

#[tool(name = "counter")]
impl Counter {
    /// A constructor: `pub`, but without `&self`, so not an export.
    pub fn new(start: u64) -> Self {
        Counter {
            start,
            calls: AtomicU64::new(0),
        }
    }

    /// Count one more call.
    pub fn bump(&self) -> u64 {
        self.start + self.calls.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Add to the start value.
    pub async fn add(&self, ctx: &ToolContext, by: u64) -> Result<u64, ToolError> {
        let _ = ctx;
        Ok(self.start + by)
    }

    fn helper(&self) -> u64 {
        self.start
    }
}

fn main() {
    let counter = Counter::new(5);
    assert_eq!(counter.helper(), 5);
    assert_eq!(counter.bump(), 6);
    let tool = counter.into_tool().unwrap();
    assert_eq!(tool.name(), "counter");
    assert_eq!(tool.exports().len(), 2);
}

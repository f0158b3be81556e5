//! Each dialect's JSON text of one registered export as a catalog item, rendered once and
//! shared by every catalog that lists the export unchanged (see `dialect::Dialect::tools_json`).
//!
//! The cache knows nothing of dialects: a slot per dialect, filled by the dialect code.

use std::sync::{Arc, OnceLock};

/// How many slots: one per dialect.
pub(crate) const SLOTS: usize = 5;

/// The renderings of one export, one slot per dialect. `None` in a filled slot: the export
/// cannot be rendered in that dialect (the plain path reports why).
#[derive(Default)]
pub(crate) struct Rendered([OnceLock<Option<Arc<str>>>; SLOTS]);

impl Rendered {
    /// Slot `slot`'s text, rendering it the first time.
    #[cfg_attr(not(feature = "host"), allow(dead_code))] // used by the dialects
    pub(crate) fn get_or_render(
        &self,
        slot: usize,
        render: impl FnOnce() -> Option<Arc<str>>,
    ) -> Option<&str> {
        self.0.get(slot)?.get_or_init(render).as_deref()
    }
}

impl std::fmt::Debug for Rendered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let filled = self.0.iter().filter(|slot| slot.get().is_some()).count();
        write!(f, "Rendered({filled} of {SLOTS})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_renders_once_and_an_unknown_slot_is_none() {
        let rendered = Rendered::default();
        let mut calls = 0;
        for _ in 0..3 {
            let text = rendered.get_or_render(1, || {
                calls += 1;
                Some(Arc::from("{}"))
            });
            assert_eq!(text, Some("{}"));
        }
        assert_eq!(calls, 1);
        assert_eq!(rendered.get_or_render(0, || None), None);
        assert_eq!(rendered.get_or_render(SLOTS, || Some(Arc::from("x"))), None);
    }
}

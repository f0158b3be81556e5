//! [`Journaled`]: what the run journal already holds of a call, and which program made it,
//! for the step loop's journal middleware.

use serde_json::Value;

/// Where a call stands in the run journal. The step loop sets it on the context it runs a
/// call with; the middleware that writes each call's start reads it. Nothing else does.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Journaled {
    /// The call's start is in the journal already (a call resumed after a crash): it is not
    /// written again.
    pub(crate) started: bool,
    /// The call is one that a code call's program made.
    pub(crate) inner: Option<InnerOf>,
}

/// A call that a code call's program made (the code call is the context's
/// [`within`](super::ToolContext::within)): its place, and what the program asked for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InnerOf {
    /// The call's position in the program, from 1.
    pub(crate) index: usize,
    /// The arguments as the program gave them (middleware may change the call's own).
    pub(crate) args: Value,
}

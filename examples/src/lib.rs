//! Shared pieces of the examples.

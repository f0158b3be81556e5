//! The examples' tests, one binary: each module runs an example (or its library part) and
//! checks what it prints. One binary links the runtime and the base tools once.

mod catalog;
mod handoff;
mod quickstart;

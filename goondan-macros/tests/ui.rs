//! Compile-time behaviour of `#[tool]`: every mistake in `ui/fail` is refused with a message
//! that points at it and says how to fix it; every form in `ui/pass` compiles. The cases use
//! the macro as users do, through `goondan-runtime` (here without its default features: the
//! tool contract).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}

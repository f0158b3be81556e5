//! Handlers: the code behind an export, typed (from `#[tool]`) or JSON-in/JSON-out (from
//! extensions), and what they may return.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use futures_util::FutureExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tools::context::ToolContext;
use crate::tools::error::{ToolError, codes};
use crate::tools::result::JsonObject;

mod finite;
#[doc(hidden)]
pub mod params;

/// What [`Handler::call`] returns: the handler's outcome, once awaited.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Outcome, HandlerError>> + Send>>;

/// The future behind a [`Pending`] result.
pub type PendingFuture = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send>>;

/// What a handler produced.
pub enum Outcome {
    /// A synchronous completion (RES-1).
    Output(Value),
    /// A synchronous completion with content parts (images, audio, resources) beside its
    /// JSON output.
    Rich(Box<crate::tools::content::ToolReturn>),
    /// Work submitted to run in the background (RES-2).
    Pending(Pending),
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Output(v) => f.debug_tuple("Output").field(v).finish(),
            Outcome::Rich(r) => f.debug_tuple("Rich").field(r).finish(),
            Outcome::Pending(_) => f.write_str("Pending(..)"),
        }
    }
}

/// How a handler can fail before or while running.
#[derive(Debug)]
pub enum HandlerError {
    /// The arguments could not be read into the handler's input type. The executor has
    /// already checked them against the export's schema, so this is a type stricter than its
    /// schema: the deserialiser's reason is what the model gets.
    InvalidArgs {
        /// The deserialiser's reason.
        reason: String,
    },
    /// The handler ran and failed.
    Failed(ToolError),
}

impl From<ToolError> for HandlerError {
    fn from(err: ToolError) -> Self {
        HandlerError::Failed(err)
    }
}

/// The code behind one export.
///
/// `#[tool]` implements it for typed functions; [`handler_fn`] wraps a JSON closure for tools
/// registered at run time.
pub trait Handler: Send + Sync + 'static {
    /// Runs the call. An asynchronous handler returns a future and runs no user code before
    /// it is polled. The executor catches panics from both the call and its future.
    fn call(&self, ctx: &ToolContext, args: JsonObject) -> HandlerFuture;
}

/// Work a handler hands to the runtime to finish in the background (RES-2).
///
/// Return it from a handler (or `Ok(Pending)`); the caller gets `status: "pending"` with a
/// handle, and the completion arrives through
/// [`PendingResults`](crate::PendingResults).
///
/// ```
/// use goondan_runtime::{Pending, ToolError};
/// let pending = Pending::new(async { Ok::<_, ToolError>(serde_json::json!({"done": true})) });
/// # drop(pending);
/// ```
pub struct Pending {
    pub(crate) future: PendingFuture,
}

impl Pending {
    /// Submits `future`; its output is serialised when it completes.
    pub fn new<F, T, E>(future: F) -> Self
    where
        F: Future<Output = Result<T, E>> + Send + 'static,
        T: Serialize + 'static,
        E: Into<ToolError>,
    {
        Pending {
            future: Box::pin(async move { future.await.map_err(Into::into).and_then(to_output) }),
        }
    }
}

/// The output as JSON. A float JSON cannot hold (infinity, NaN) is an error, never the `null`
/// `serde_json` would write for it. An output that is JSON already, or a string, is moved into
/// the result: serialising it would copy it whole.
fn to_output<T: Serialize + 'static>(value: T) -> Result<Value, ToolError> {
    let value = match moved_json(value) {
        Ok(json) => return Ok(json),
        Err(value) => value,
    };
    if let Err(what) = finite::check(&value) {
        return Err(ToolError::new(format!(
            "the tool's output holds a number JSON cannot represent ({what})"
        ))
        .with_code(codes::OUTPUT)
        .with_name("ToolOutputError")
        .with_suggestion(
            "the tool computed an infinite or undefined number; try other arguments, or report it to the tool's author",
        ));
    }
    serde_json::to_value(value).map_err(|e| {
        ToolError::new(format!(
            "the tool's output could not be turned into JSON: {e}"
        ))
        .with_code(codes::OUTPUT)
        .with_name("ToolOutputError")
        .with_suggestion("this is a bug in the tool; report it to its author")
    })
}

/// `value` as JSON when it is JSON already or a string, moved; else `value` back.
fn moved_json<T: 'static>(value: T) -> Result<Value, T> {
    let mut slot = Some(value);
    let any: &mut dyn std::any::Any = &mut slot;
    let json = if let Some(json) = any.downcast_mut::<Option<Value>>() {
        json.take()
    } else if let Some(text) = any.downcast_mut::<Option<String>>() {
        text.take().map(Value::String)
    } else {
        None
    };
    match (json, slot) {
        (Some(json), _) => Ok(json),
        (None, Some(value)) => Err(value),
        (None, None) => unreachable!("the slot is emptied only by a move into `json`"),
    }
}

/// What a handler may return: any `Serialize` value, a [`Pending`], or content parts
/// ([`Content`](crate::tools::content::Content), [`ToolReturn`](crate::tools::content::ToolReturn)).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    label = "this type does not implement `Serialize`",
    note = "return a type that implements `serde::Serialize`, a `goondan_runtime::Pending`, a `goondan_runtime::tools::content::Content` or `ToolReturn`, or `Result<T, E>` where `E: Into<ToolError>`"
)]
pub trait IntoOutcome {
    /// Converts the value into an [`Outcome`].
    fn into_outcome(self) -> Result<Outcome, ToolError>;
}

#[diagnostic::do_not_recommend]
impl<T: Serialize + 'static> IntoOutcome for T {
    fn into_outcome(self) -> Result<Outcome, ToolError> {
        to_output(self).map(Outcome::Output)
    }
}

impl IntoOutcome for Pending {
    fn into_outcome(self) -> Result<Outcome, ToolError> {
        Ok(Outcome::Pending(self))
    }
}

impl IntoOutcome for crate::tools::content::ToolReturn {
    fn into_outcome(self) -> Result<Outcome, ToolError> {
        Ok(Outcome::Rich(Box::new(self)))
    }
}

impl IntoOutcome for crate::tools::content::Content {
    fn into_outcome(self) -> Result<Outcome, ToolError> {
        crate::tools::content::ToolReturn::parts(vec![self]).into_outcome()
    }
}

/// A typed input: the arguments object is deserialised into it, and its schema is what the
/// model sees.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as a tool input",
    label = "this type must implement `Deserialize` and `JsonSchema`",
    note = "derive them: `#[derive(serde::Deserialize, schemars::JsonSchema)]` (both are re-exported by `goondan_runtime::prelude`)"
)]
pub trait ToolInput: DeserializeOwned + schemars::JsonSchema + Send + 'static {}

#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned + schemars::JsonSchema + Send + 'static> ToolInput for T {}

/// `#[tool]` names each input type through this trait, so that a type that cannot be an input
/// gets exactly one error, with the caret on the type. Not for use outside generated code.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as a tool input",
    label = "this type must implement `Deserialize` and `JsonSchema`",
    note = "derive them: `#[derive(serde::Deserialize, schemars::JsonSchema)]` (both are re-exported by `goondan_runtime::prelude`)"
)]
pub trait InputType {
    /// `Self`.
    type Type;
}

#[diagnostic::do_not_recommend]
impl<T: ToolInput> InputType for T {
    type Type = T;
}

/// An error type a fallible handler may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned as a tool error",
    label = "`ToolError` does not implement `From<{Self}>`",
    note = "return `ToolError`, or implement `From<{Self}> for goondan_runtime::ToolError`"
)]
pub trait IntoToolError {
    /// Converts the error.
    fn into_tool_error(self) -> ToolError;
}

#[diagnostic::do_not_recommend]
impl<E: Into<ToolError>> IntoToolError for E {
    fn into_tool_error(self) -> ToolError {
        self.into()
    }
}

/// How a typed handler reads its input `I` from the arguments object.
pub(crate) trait ReadInput<I>: Send + Sync + 'static {
    /// Reads the input.
    fn read(&self, args: JsonObject) -> Result<I, HandlerError>;
}

/// The input deserialised from the whole arguments object.
pub(crate) struct WholeInput;

impl<I: ToolInput> ReadInput<I> for WholeInput {
    fn read(&self, args: JsonObject) -> Result<I, HandlerError> {
        read_input(args)
    }
}

/// A handler built from a typed closure, as `#[tool]` generates; `R` reads its input.
pub(crate) struct TypedHandler<I, F, R> {
    pub(crate) f: F,
    pub(crate) read: R,
    pub(crate) input: PhantomData<fn() -> I>,
}

impl<I, F, Fut, R> Handler for TypedHandler<I, F, R>
where
    I: ToolInput,
    F: Fn(ToolContext, I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Outcome, ToolError>> + Send + 'static,
    R: ReadInput<I>,
{
    fn call(&self, ctx: &ToolContext, args: JsonObject) -> HandlerFuture {
        match self.read.read(args) {
            Ok(input) => {
                let running = (self.f)(ctx.clone(), input);
                Box::pin(async move { running.await.map_err(HandlerError::Failed) })
            }
            Err(err) => Box::pin(std::future::ready(Err(err))),
        }
    }
}

/// Deserialises the input from the arguments, moving their strings and arrays into it (no
/// copy): the executor checked them against the schema before, so they are not needed after.
pub(crate) fn read_input<I: ToolInput>(args: JsonObject) -> Result<I, HandlerError> {
    I::deserialize(Value::Object(args)).map_err(|err| HandlerError::InvalidArgs {
        reason: err.to_string(),
    })
}

/// A handler built from a synchronous typed closure, as `#[tool]` generates for a plain `fn`:
/// it answers without a future; `R` reads its input.
pub(crate) struct TypedSyncHandler<I, F, R> {
    pub(crate) f: F,
    pub(crate) read: R,
    pub(crate) input: PhantomData<fn() -> I>,
}

impl<I, F, R> Handler for TypedSyncHandler<I, F, R>
where
    I: ToolInput,
    F: Fn(&ToolContext, I) -> Result<Outcome, ToolError> + Send + Sync + 'static,
    R: ReadInput<I>,
{
    /// Does the work here, on the caller's thread: the export is declared blocking, so the
    /// executor calls this on Tokio's blocking pool.
    fn call(&self, ctx: &ToolContext, args: JsonObject) -> HandlerFuture {
        let outcome = self
            .read
            .read(args)
            .and_then(|input| (self.f)(ctx, input).map_err(HandlerError::Failed));
        Box::pin(std::future::ready(outcome))
    }
}

struct FnHandler<F>(F);

impl<F, Fut, T, E> Handler for FnHandler<F>
where
    F: Fn(ToolContext, JsonObject) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    T: IntoOutcome,
    E: Into<ToolError>,
{
    fn call(&self, ctx: &ToolContext, args: JsonObject) -> HandlerFuture {
        let fut = (self.0)(ctx.clone(), args);
        Box::pin(fut.map(|result| match result {
            Ok(v) => v.into_outcome().map_err(HandlerError::Failed),
            Err(e) => Err(HandlerError::Failed(e.into())),
        }))
    }
}

/// A handler from a closure over the raw arguments object, for tools registered at run time
/// (CAT-4). The executor validates the arguments against the export's schema before calling it.
///
/// ```
/// use goondan_runtime::{handler_fn, ToolError};
/// let handler = handler_fn(|_ctx, args| async move {
///     let city = args.get("city").and_then(|v| v.as_str()).unwrap_or_default().to_owned();
///     Ok::<_, ToolError>(serde_json::json!({"city": city, "celsius": 21}))
/// });
/// # drop(handler);
/// ```
pub fn handler_fn<F, Fut, T, E>(f: F) -> impl Handler
where
    F: Fn(ToolContext, JsonObject) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    T: IntoOutcome,
    E: Into<ToolError>,
{
    FnHandler(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_that_is_json_or_a_string_is_moved_not_copied() {
        let text = "a long answer ".repeat(100);
        let at = text.as_ptr();
        let Ok(Outcome::Output(Value::String(out))) = text.into_outcome() else {
            panic!("a string output is a JSON string");
        };
        assert_eq!(out.as_ptr(), at);

        let json = serde_json::json!({"rows": [{"text": "x".repeat(100)}]});
        let at = json["rows"][0]["text"].as_str().map(str::as_ptr);
        let Ok(Outcome::Output(out)) = json.clone().into_outcome() else {
            panic!("a JSON output is itself");
        };
        assert_eq!(out, json);
        let Ok(Outcome::Output(moved)) = json.into_outcome() else {
            panic!("a JSON output is itself");
        };
        assert_eq!(moved["rows"][0]["text"].as_str().map(str::as_ptr), at);
    }

    #[test]
    fn any_other_output_is_serialised_and_a_non_finite_float_refused() {
        let Ok(Outcome::Output(out)) = (1.5_f64, "b").into_outcome() else {
            panic!("a tuple serialises");
        };
        assert_eq!(out, serde_json::json!([1.5, "b"]));
        let Err(err) = f64::NAN.into_outcome() else {
            panic!("NaN is no JSON");
        };
        assert_eq!(err.code(), codes::OUTPUT);
    }
}

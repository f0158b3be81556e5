//! Fuzzing entry points for goondan-runtime: one function per fuzz target, each taking the raw
//! input bytes. The targets in `fuzz_targets/` call them under libFuzzer; the regression tests
//! (`goondan-runtime/tests/fuzz_regressions.rs`) include this file and replay the inputs a
//! fuzzer found through the very same functions.
//!
//! Each entry point must never panic on any input, and checks a few properties that hold for
//! every input (a failed `assert!` is a crash the fuzzer reports):
//!
//! - [`tool_name`]: `validate_tool_name` and `ToolName::parse` agree; a valid name splits back
//!   into the parts it was joined from (NAME-6).
//! - [`args`]: for a corpus type, the validator's verdict and its problem list agree; typed
//!   deserialisation never panics.
//! - [`args_differential`]: the validator accepts exactly what serde accepts (as
//!   `tests/differential.rs` checks on generated arguments).
//! - [`execute`]: the executor answers every call, echoing its id and name; an `ok` output is
//!   serde's reading of the arguments (what the typed handler received).
//! - [`bundle_yaml`]: a bundle from any text, and every question a host asks of it.
//! - [`ipc_frame`]: a decoded IPC message encodes and decodes back to itself; a byte stream of
//!   frames is read to its end.
//! - [`dialect_calls`]: a provider response parses into calls or an error, and each call's
//!   result renders.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../tests/corpus/mod.rs"]
pub mod corpus;

use std::sync::{Arc, OnceLock};

use goondan_runtime::agents::orchestrator::ipc;
use goondan_runtime::bundle::Kind;
use goondan_runtime::testing::TestKit;
use goondan_runtime::tools::name::{
    MAX_TOOL_NAME_LEN, SEPARATOR, split_tool_name, validate_export_name, validate_resource_name,
    validate_tool_name,
};
use goondan_runtime::tools::schema::ArgValidator;
use goondan_runtime::{
    Bundle, CatalogItem, Dialect, Export, Tool, ToolCall, ToolCallResult, ToolCatalog, ToolError,
    ToolLibrary, ToolName, ToolStatus,
};
use serde_json::Value;

/// The Tool resource every corpus export belongs to.
pub const CORPUS_TOOL: &str = "corpus";

/// Tool names: the input as a full name, and, split at its first NUL, as a resource and an
/// export name to join.
pub fn tool_name(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check_full_name(text);
    if let Some((resource, export)) = text.split_once('\0') {
        check_joined_name(resource, export);
    }
}

fn check_full_name(text: &str) {
    match (validate_tool_name(text), ToolName::parse(text)) {
        (Ok((resource, export)), Ok(name)) => {
            assert_eq!(name.as_str(), text);
            assert_eq!((name.resource(), name.export()), (resource, export));
            assert_eq!(split_tool_name(text), Some((resource, export)));
            assert_eq!(format!("{resource}{SEPARATOR}{export}"), text);
            assert!(validate_resource_name(resource).is_ok(), "{text:?}");
            assert!(validate_export_name(export).is_ok(), "{text:?}");
            assert!(text.chars().count() <= MAX_TOOL_NAME_LEN, "{text:?}");
            assert_eq!(name.identity(), format!("Tool/{resource}"));
            let rebuilt = ToolName::new(resource, export)
                .unwrap_or_else(|e| panic!("{text:?} parses but its parts do not join: {e}"));
            assert_eq!(rebuilt, name);
        }
        (Err(a), Err(b)) => {
            assert_eq!(a, b);
            assert!(!a.to_string().is_empty());
        }
        (a, b) => {
            panic!("validate_tool_name and ToolName::parse disagree on {text:?}: {a:?} / {b:?}")
        }
    }
}

fn check_joined_name(resource: &str, export: &str) {
    let joined = format!("{resource}{SEPARATOR}{export}");
    match ToolName::new(resource, export) {
        Ok(name) => {
            // NAME-6: the joined name splits back into exactly these parts.
            assert_eq!(name.as_str(), joined);
            assert_eq!((name.resource(), name.export()), (resource, export));
            let parsed = ToolName::parse(&joined)
                .unwrap_or_else(|e| panic!("{joined:?} was built but does not parse: {e}"));
            assert_eq!((parsed.resource(), parsed.export()), (resource, export));
        }
        Err(e) => {
            let parts_ok =
                validate_resource_name(resource).is_ok() && validate_export_name(export).is_ok();
            assert!(
                !parts_ok || joined.chars().count() > MAX_TOOL_NAME_LEN,
                "{resource:?} and {export:?} are valid and short, yet do not join: {e}"
            );
        }
    }
}

struct CorpusCase {
    case: corpus::Case,
    validator: ArgValidator,
}

fn corpus_cases() -> &'static [CorpusCase] {
    static CASES: OnceLock<Vec<CorpusCase>> = OnceLock::new();
    CASES.get_or_init(|| {
        corpus::corpus()
            .into_iter()
            .map(|case| CorpusCase {
                validator: ArgValidator::new(&case.schema),
                case,
            })
            .collect()
    })
}

/// Splits the input into a corpus case (first byte) and JSON arguments (the rest).
fn case_and_args(data: &[u8]) -> Option<(&'static CorpusCase, Value)> {
    let (&pick, json) = data.split_first()?;
    let cases = corpus_cases();
    let case = &cases[usize::from(pick) % cases.len()];
    let args = serde_json::from_slice(json).ok()?;
    Some((case, args))
}

/// Argument validation: the first byte picks a corpus type, the rest is JSON arguments.
pub fn args(data: &[u8]) {
    let Some((case, args)) = case_and_args(data) else {
        return;
    };
    let valid = case.validator.is_valid(&args);
    let problems = case.validator.problems(&args);
    assert_eq!(
        valid,
        problems.is_empty(),
        "{}: is_valid and problems disagree on {args}: {problems:?}",
        case.case.name
    );
    for p in &problems {
        assert!(!p.message.is_empty(), "{}: {p:?}", case.case.name);
    }
    let _ = (case.case.serde)(&args);
}

/// Whether `output` (serde's re-serialisation) keeps every key and value kind of `input`,
/// as `tests/differential.rs` defines "serde accepts".
fn covers(input: &Value, output: &Value) -> bool {
    match (input, output) {
        (Value::Object(i), Value::Object(o)) => i
            .iter()
            .all(|(k, v)| o.get(k).is_some_and(|w| covers(v, w))),
        (Value::Array(i), Value::Array(o)) => {
            i.len() == o.len() && i.iter().zip(o).all(|(a, b)| covers(a, b))
        }
        (Value::Number(_), Value::Number(_)) => true,
        (a, b) => a == b,
    }
}

/// The differential property: the validator accepts exactly what serde accepts.
pub fn args_differential(data: &[u8]) {
    let Some((case, args)) = case_and_args(data) else {
        return;
    };
    let validator = case.validator.is_valid(&args);
    // The executor hands serde the arguments with integral floats made integers where the
    // schema says integer (`2.0` is an integer in JSON Schema); serde reads those.
    let mut read = args.clone();
    case.validator.normalise(&mut read);
    let serde = (case.case.serde)(&read);
    let serde_ok = serde.as_ref().is_ok_and(|out| covers(&read, out));
    assert_eq!(
        validator,
        serde_ok,
        "{}: validator and serde disagree on {args}: serde {serde:?}, validator {:?}",
        case.case.name,
        case.validator.problems(&args)
    );
}

/// serde's reading of `args` as `T`, serialised back: what a typed handler of `T` receives.
fn serde_reading<T: serde::Serialize + serde::de::DeserializeOwned>(
    args: &Value,
) -> Result<Value, String> {
    let typed: T = serde_json::from_value(args.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

/// serde's reading of some arguments, see [`serde_reading`].
type Reading = fn(&Value) -> Result<Value, String>;

/// One corpus export: its handler answers with the input it received.
struct TypedCase {
    export: Export,
    /// The name of the export in the `corpus` Tool.
    name: String,
    /// What the handler answers for given arguments, when serde reads them.
    reading: Reading,
}

fn typed_case<T>(type_name: &str) -> TypedCase
where
    T: serde::Serialize + serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
{
    let name = type_name.to_lowercase();
    let export = Export::typed(name.clone(), |_ctx, input: T| async move {
        serde_json::to_value(&input).map_err(|e| ToolError::new(e.to_string()))
    });
    TypedCase {
        export,
        name,
        reading: serde_reading::<T>,
    }
}

macro_rules! typed_cases {
    ($($ty:ident),* $(,)?) => {
        vec![$(typed_case::<corpus::$ty>(stringify!($ty))),*]
    };
}

/// An export per corpus type, named as [`corpus::export_name`] names it.
fn typed_cases() -> Vec<TypedCase> {
    typed_cases![
        Primitives,
        Integers,
        Optionals,
        AllOptional,
        Lists,
        Maps,
        Nested,
        UnitEnum,
        DocumentedEnum,
        External,
        Internal,
        Adjacent,
        Flattened,
        CamelCase,
        Renamed,
        Defaults,
        StructDefault,
        Strict,
        Tree,
        Calc,
        AnyJson,
        Timestamps,
        Skipped,
        Empty,
        Bounds,
        Boxed,
        Newtype,
        EnumList,
        RenamedVariants,
        OptionalNested,
        ExecParams,
        KebabStrict,
        Command,
        Tupled,
        FlattenedEnum,
    ]
}

/// The `corpus` Tool: a typed export per corpus type.
pub fn corpus_tool() -> Tool {
    typed_cases()
        .into_iter()
        .fold(Tool::builder(CORPUS_TOOL), |b, c| b.export(c.export))
        .build()
        .expect("the corpus tool is valid")
}

/// The name and serde reading of each export of [`corpus_tool`], in corpus order.
fn readings() -> &'static [(String, Reading)] {
    static READINGS: OnceLock<Vec<(String, Reading)>> = OnceLock::new();
    READINGS.get_or_init(|| {
        typed_cases()
            .into_iter()
            .map(|c| (c.name, c.reading))
            .collect()
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

fn kit() -> &'static TestKit {
    static KIT: OnceLock<TestKit> = OnceLock::new();
    KIT.get_or_init(|| TestKit::with_tools([corpus_tool()]).expect("the corpus kit"))
}

/// The executor: the first byte picks a corpus export (or, past the last one, a name read from
/// the input up to its first NUL); the rest is the arguments, as JSON, else as a string.
pub fn execute(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let readings = readings();
    let pick = usize::from(pick) % (readings.len() + 1);
    let (name, raw) = match readings.get(pick) {
        Some((export, _)) => (format!("{CORPUS_TOOL}{SEPARATOR}{export}"), rest),
        None => {
            let cut = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            let name = String::from_utf8_lossy(&rest[..cut]).into_owned();
            (name, rest.get(cut + 1..).unwrap_or_default())
        }
    };
    let reading = readings
        .iter()
        .find(|(export, _)| split_tool_name(&name) == Some((CORPUS_TOOL, export.as_str())))
        .map(|(_, reading)| reading);
    let args = serde_json::from_slice(raw)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(raw).into_owned()));
    let call = ToolCall::new("call_fuzz", name.clone(), args.clone());
    let result = runtime().block_on(kit().execute(call));
    assert_eq!(result.tool_call_id, "call_fuzz");
    assert_eq!(result.tool_name, name);
    match result.status {
        ToolStatus::Ok => {
            let reading =
                reading.unwrap_or_else(|| panic!("{name:?} is not a corpus export, yet ran"));
            // Only arguments the schema the model sees accepts may reach a handler.
            let entry = kit().registry().get(&name);
            let entry = entry.unwrap_or_else(|| panic!("{name:?} ran but is not registered"));
            let shown = if args.is_null() {
                serde_json::json!({})
            } else {
                args.clone()
            };
            assert!(
                entry.export().validator().is_valid(&shown),
                "{name}: ran with arguments its schema refuses: {args}"
            );
            let mut read = shown;
            entry.export().validator().normalise(&mut read);
            assert_eq!(
                result.output,
                reading(&read).ok(),
                "{name}: the handler got other arguments than serde makes of {args}"
            );
        }
        ToolStatus::Error => assert!(result.error.is_some(), "{result:?}"),
        ToolStatus::Pending => panic!("{name}: a typed handler answered `pending`"),
    }
}

/// The bundle loader: the input as `goondan.yaml`, then every question a host asks of it.
pub fn bundle_yaml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let bundle = Bundle::from_yaml(text, "goondan.yaml");
    for d in bundle.diagnostics() {
        let _ = d.to_string();
    }
    for r in bundle.resources() {
        let _ = (r.identity(), r.line(), r.spec());
        let _ = (r.tool_refs(), r.agent_refs(), r.entry_agent());
    }
    let agents: Vec<String> = bundle
        .of_kind(&Kind::Agent)
        .map(|a| a.name.clone())
        .collect();
    for agent in &agents {
        let _ = bundle.agent_tools(agent);
        let _ = bundle.max_steps_per_turn(agent);
    }
    let _ = bundle.entry_agent();
    let _ = bundle.registry(library()).map_err(|e| e.to_string());
    let _ = bundle.checked().map_err(|e| e.to_string());
}

fn library() -> &'static ToolLibrary {
    static LIBRARY: OnceLock<ToolLibrary> = OnceLock::new();
    LIBRARY.get_or_init(|| ToolLibrary::new([corpus_tool()]))
}

/// The largest frame [`ipc_frame`] reads, small so that the oversized path is reached.
pub const FUZZ_MAX_FRAME_BYTES: usize = 512;

/// IPC frames: the input as one frame body, then as a stream of length-prefixed frames.
pub fn ipc_frame(data: &[u8]) {
    if let Ok(msg) = ipc::decode(data) {
        let frame = ipc::encode(&msg).expect("a decoded message encodes");
        let (len, body) = frame.split_at(4);
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        assert_eq!(usize::try_from(len).ok(), Some(body.len()));
        let again = ipc::decode(body).expect("an encoded message decodes");
        assert_eq!(again, msg);
    }
    runtime().block_on(async {
        // Every frame is an item (a message or a recoverable error) until the stream ends; the
        // codec never loops without consuming input and never holds more than one frame.
        let mut frames = ipc::frame_reader(data, FUZZ_MAX_FRAME_BYTES);
        let mut items = 0usize;
        loop {
            match ipc::read_frame(&mut frames).await {
                Ok(msg) => assert_eq!(msg.v, ipc::PROTOCOL_VERSION),
                Err(e) if e.is_recoverable() => {}
                Err(_) => break,
            }
            items += 1;
            assert!(items <= data.len() / 4, "more frames than the input holds");
            assert!(frames.read_buffer().len() <= data.len());
        }
    });
}

/// The catalog the dialect targets parse against: every corpus export, plus tools with odd
/// schemas, so that argument decoding meets each kind of schema.
fn dialect_catalog() -> &'static ToolCatalog {
    static CATALOG: OnceLock<ToolCatalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut catalog = ToolCatalog::new();
        for c in corpus_cases() {
            let name = ToolName::new(CORPUS_TOOL, &corpus::export_name(&c.case))
                .expect("a corpus name is valid");
            let mut item = CatalogItem::new(name);
            item.set_parameters(Arc::clone(&c.case.schema));
            catalog.push(item);
        }
        for (i, schema) in corpus::odd_schemas().into_iter().enumerate() {
            let name = ToolName::new("odd", &format!("s{i}")).expect("a valid name");
            let mut item = CatalogItem::new(name);
            item.set_parameters(schema);
            catalog.push(item);
        }
        catalog
    })
}

/// A provider response (JSON) through `dialect`'s `parse_calls`; each call's result renders.
pub fn dialect_calls(dialect: Dialect, data: &[u8]) {
    let Ok(response) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    match dialect.parse_calls(&response, dialect_catalog()) {
        Ok(calls) => {
            for call in calls {
                let ok = ToolCallResult::ok(&call.id, &call.name, call.args.clone());
                let _ = dialect.render_result(&ok);
                let err = ToolCallResult::error(&call.id, &call.name, ToolError::new("fuzz"));
                let _ = dialect.render_result(&err);
            }
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
        }
    }
}

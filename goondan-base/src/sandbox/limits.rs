//! How much of the machine one call may use: [`Limits`] on memory, processes and CPU time,
//! held by the call's cgroup (see `bash::cgroup` for how and where).
//!
//! A limit is either a **default** or **set**. The defaults ([`DEFAULT_MEMORY`],
//! [`DEFAULT_PROCESSES`], no CPU limit) are enforced wherever this host can; where it cannot
//! (no controller for this process's cgroup), a warning is logged once and calls run. A limit
//! that is set (by a bundle, a program, a tool or the call) is enforced, or, in the sandbox, the
//! call is refused with `E_SANDBOX_UNAVAILABLE`: nothing runs with less confinement than asked.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The memory a call may use when no limit is set: 4 GiB, enough for the compilers and test
/// suites of ordinary projects, and a bound on a command that allocates without end.
pub const DEFAULT_MEMORY: u64 = 4 << 30;
/// The processes (and threads: the kernel counts tasks) a call may have at once when no limit
/// is set: enough for a parallel build on a large machine, and far below the kernel's own
/// ceiling, so a fork bomb stops here.
pub const DEFAULT_PROCESSES: u64 = 4096;

/// The least memory limit: below it, a limit is a mistake of units (`512` meaning MiB).
const LEAST_MEMORY: u64 = 1 << 20;
/// The largest memory limit: more than any machine has.
const MOST_MEMORY: u64 = 64 << 40;
/// The largest process limit: the kernel's own ceiling on process ids.
const MOST_PROCESSES: u64 = 1 << 22;
/// The least CPU limit, in thousandths of a core (the kernel's least quota is 1 ms per
/// 100 ms period).
const LEAST_CPU_MILLIS: u32 = 10;
/// The largest CPU limit, in thousandths of a core.
const MOST_CPU_MILLIS: u32 = 4096 * 1000;

/// What a limit bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Resource {
    /// Memory, in bytes (swap included where the kernel accounts it).
    Memory,
    /// Processes and threads at once.
    Processes,
    /// CPU time, in cores: a command past it is slowed, not stopped.
    Cpu,
}

impl Resource {
    /// Every resource, in the order they are shown.
    pub const ALL: [Self; 3] = [Self::Memory, Self::Processes, Self::Cpu];

    /// The name a bundle and a call use: `memory`, `processes`, `cpu`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Processes => "processes",
            Self::Cpu => "cpu",
        }
    }
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A limit that cannot be used. Nothing runs under it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// Zero or negative.
    #[error("the {resource} limit must be more than zero")]
    Zero {
        /// The limit.
        resource: Resource,
    },
    /// Below the least that makes sense.
    #[error("the {resource} limit {value} is below the least, {least}")]
    TooSmall {
        /// The limit.
        resource: Resource,
        /// What was asked.
        value: String,
        /// The least.
        least: String,
    },
    /// Above the largest.
    #[error("the {resource} limit {value} is above the largest, {most}")]
    TooLarge {
        /// The limit.
        resource: Resource,
        /// What was asked (its start, when long).
        value: String,
        /// The largest.
        most: String,
    },
    /// Not a number or a size.
    #[error("the {resource} limit `{value}` cannot be read: {why}")]
    Malformed {
        /// The limit.
        resource: Resource,
        /// What was written (its start, when long).
        value: String,
        /// What is expected.
        why: &'static str,
    },
    /// A call asked for more than its tool allows.
    #[error("the {resource} limit {asked} is above this tool's, {bound}: a call may only lower it")]
    AboveBound {
        /// The limit.
        resource: Resource,
        /// What the call asked.
        asked: String,
        /// The tool's.
        bound: String,
    },
    /// A key that is no limit.
    #[error("unknown limit `{0}` (memory, processes, cpu)")]
    Unknown(String),
    /// `limits` is not a map.
    #[error("limits must be a map of memory, processes and cpu, found {0}")]
    NotAMap(&'static str),
}

/// How much of the machine one call may use: memory, processes and optionally CPU time.
///
/// A limit is either a default or set. The defaults ([`DEFAULT_MEMORY`], [`DEFAULT_PROCESSES`],
/// no CPU limit) are enforced wherever this host can; where it cannot, a warning is logged once
/// and calls run. A limit that is set (by a bundle, a program, a tool or the call) is enforced,
/// or, in the sandbox, the call is refused with `E_SANDBOX_UNAVAILABLE`. A sandbox policy's
/// limits bound its tools' ([`Limits::within`]), and a tool's bound its calls'
/// ([`Limits::lowered`]).
///
/// ```
/// use goondan_base::sandbox::{Limits, Resource};
///
/// let limits = Limits::default().with_memory(512 << 20)?.with_cpu(1.5)?;
/// assert_eq!(limits.memory(), 512 << 20);
/// assert_eq!(limits.processes(), goondan_base::sandbox::DEFAULT_PROCESSES);
/// assert!(limits.is_set(Resource::Memory) && !limits.is_set(Resource::Processes));
/// assert!(Limits::default().with_processes(0).is_err());
/// # Ok::<(), goondan_base::sandbox::LimitError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    memory: Option<u64>,
    processes: Option<u64>,
    /// Thousandths of a core.
    cpu: Option<u32>,
}

impl Limits {
    /// Sets the memory limit, in bytes (at least 1 MiB, at most 64 TiB).
    pub fn with_memory(mut self, bytes: u64) -> Result<Self, LimitError> {
        let resource = Resource::Memory;
        if bytes == 0 {
            return Err(LimitError::Zero { resource });
        }
        if bytes < LEAST_MEMORY {
            return Err(LimitError::TooSmall {
                resource,
                value: size_text(bytes),
                least: size_text(LEAST_MEMORY),
            });
        }
        if bytes > MOST_MEMORY {
            return Err(LimitError::TooLarge {
                resource,
                value: size_text(bytes),
                most: size_text(MOST_MEMORY),
            });
        }
        self.memory = Some(bytes);
        Ok(self)
    }

    /// Sets how many processes (threads included) may run at once (at most 4194304, the
    /// kernel's ceiling).
    pub fn with_processes(mut self, count: u64) -> Result<Self, LimitError> {
        let resource = Resource::Processes;
        if count == 0 {
            return Err(LimitError::Zero { resource });
        }
        if count > MOST_PROCESSES {
            return Err(LimitError::TooLarge {
                resource,
                value: count.to_string(),
                most: MOST_PROCESSES.to_string(),
            });
        }
        self.processes = Some(count);
        Ok(self)
    }

    /// Sets the CPU time a call may use, in cores (`0.5` is half of one core's time; from 0.01
    /// to 4096). Past it, the call's processes are slowed, not stopped.
    pub fn with_cpu(mut self, cores: f64) -> Result<Self, LimitError> {
        let resource = Resource::Cpu;
        if cores.is_nan() {
            return Err(LimitError::Malformed {
                resource,
                value: "NaN".to_owned(),
                why: "expected a number of cores, such as 1.5",
            });
        }
        if cores <= 0.0 {
            return Err(LimitError::Zero { resource });
        }
        let millis = (cores * 1000.0).round();
        if millis > f64::from(MOST_CPU_MILLIS) {
            return Err(LimitError::TooLarge {
                resource,
                value: format!("{cores}").chars().take(32).collect(),
                most: cores_text(MOST_CPU_MILLIS),
            });
        }
        // Within 0..=MOST_CPU_MILLIS and whole: the conversion is exact.
        let millis = millis as u32;
        if millis < LEAST_CPU_MILLIS {
            return Err(LimitError::TooSmall {
                resource,
                value: format!("{cores}"),
                least: cores_text(LEAST_CPU_MILLIS),
            });
        }
        self.cpu = Some(millis);
        Ok(self)
    }

    /// The memory limit in bytes ([`DEFAULT_MEMORY`] unless set).
    pub fn memory(&self) -> u64 {
        self.memory.unwrap_or(DEFAULT_MEMORY)
    }

    /// The process limit ([`DEFAULT_PROCESSES`] unless set).
    pub fn processes(&self) -> u64 {
        self.processes.unwrap_or(DEFAULT_PROCESSES)
    }

    /// The CPU limit in cores, if any.
    pub fn cpu(&self) -> Option<f64> {
        self.cpu.map(|millis| f64::from(millis) / 1000.0)
    }

    /// The CPU limit in thousandths of a core, if any.
    pub(crate) fn cpu_millis(&self) -> Option<u32> {
        self.cpu
    }

    /// Whether `resource`'s limit was set (enforced, or the sandboxed call refused), not a
    /// default (enforced where this host can).
    pub fn is_set(&self, resource: Resource) -> bool {
        match resource {
            Resource::Memory => self.memory.is_some(),
            Resource::Processes => self.processes.is_some(),
            Resource::Cpu => self.cpu.is_some(),
        }
    }

    /// Whether `resource` is limited at all (memory and processes always are; CPU when set).
    pub fn limits(&self, resource: Resource) -> bool {
        resource != Resource::Cpu || self.cpu.is_some()
    }

    /// `resource`'s limit as people read it: `512 MiB`, `256`, `1.5 cores`, `none`.
    pub fn describe(&self, resource: Resource) -> String {
        match resource {
            Resource::Memory => size_text(self.memory()),
            Resource::Processes => self.processes().to_string(),
            Resource::Cpu => self.cpu.map_or_else(|| "none".to_owned(), cores_text),
        }
    }

    /// These limits kept within `bound`'s: each the lower of the two, set when either is.
    #[must_use]
    pub fn within(self, bound: &Limits) -> Limits {
        let lower = |a: Option<u64>, b: Option<u64>, default: u64| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(default).min(b.unwrap_or(default))),
        };
        Limits {
            memory: lower(self.memory, bound.memory, DEFAULT_MEMORY),
            processes: lower(self.processes, bound.processes, DEFAULT_PROCESSES),
            cpu: match (self.cpu, bound.cpu) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }

    /// These limits lowered by a call's `asked` ones: each asked limit must be valid and at
    /// most this one (a CPU limit may be asked where there is none).
    pub fn lowered(&self, asked: &LimitsInput) -> Result<Limits, LimitError> {
        let mut lowered = *self;
        if let Some(memory) = &asked.memory {
            lowered = lowered.with_memory(memory.bytes()?)?;
        }
        if let Some(processes) = asked.processes {
            lowered = lowered.with_processes(processes)?;
        }
        if let Some(cores) = asked.cpu {
            lowered = lowered.with_cpu(cores)?;
        }
        for resource in Resource::ALL {
            let above = match resource {
                Resource::Memory => lowered.memory() > self.memory(),
                Resource::Processes => lowered.processes() > self.processes(),
                Resource::Cpu => matches!((lowered.cpu, self.cpu), (Some(a), Some(b)) if a > b),
            };
            if above {
                return Err(LimitError::AboveBound {
                    resource,
                    asked: lowered.describe(resource),
                    bound: self.describe(resource),
                });
            }
        }
        Ok(lowered)
    }

    /// The limits a bundle's `policy.sandbox.limits` says: a map of `memory` (bytes, or a size
    /// such as `"512MiB"`), `processes` (a count) and `cpu` (cores).
    ///
    /// ```
    /// use goondan_base::sandbox::Limits;
    /// use serde_json::json;
    ///
    /// let limits = Limits::from_bundle(&json!({"memory": "512MiB", "processes": 256, "cpu": 1.5}))?;
    /// assert_eq!((limits.memory(), limits.processes(), limits.cpu()), (512 << 20, 256, Some(1.5)));
    /// assert!(Limits::from_bundle(&json!({"memory": "512MB"})).is_err());
    /// # Ok::<(), goondan_base::sandbox::LimitError>(())
    /// ```
    pub fn from_bundle(value: &serde_json::Value) -> Result<Self, LimitError> {
        use serde_json::Value;
        let Value::Object(map) = value else {
            return Err(LimitError::NotAMap(kind(value)));
        };
        let mut limits = Self::default();
        for (key, value) in map {
            limits = match key.as_str() {
                "memory" => limits.with_memory(Size::from_value(value)?.bytes()?)?,
                "processes" => limits.with_processes(count(value)?)?,
                "cpu" => {
                    let cores = value.as_f64().ok_or_else(|| LimitError::Malformed {
                        resource: Resource::Cpu,
                        value: shown(&value.to_string()),
                        why: "expected a number of cores, such as 1.5",
                    })?;
                    limits.with_cpu(cores)?
                }
                other => return Err(LimitError::Unknown(shown(other))),
            };
        }
        Ok(limits)
    }
}

/// A call's own limits (the `limits` argument of `bash__exec` and `bash__script`): each may only
/// lower the tool's.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsInput {
    /// The most memory the command may use: bytes, or a size such as "512MiB" (units KiB,
    /// MiB, GiB, TiB). Past it the command is killed.
    #[serde(default)]
    pub memory: Option<Size>,
    /// The most processes (threads included) the command may run at once. Past it the call
    /// is ended.
    #[serde(default)]
    pub processes: Option<u64>,
    /// The most CPU time, in cores (0.5 is half of one core). Past it the command is slowed.
    #[serde(default)]
    pub cpu: Option<f64>,
}

/// A size in bytes: a number, or a text with a unit (`"512MiB"`, `"1.5 GiB"`, `"4096"`).
///
/// ```
/// use goondan_base::sandbox::Size;
///
/// assert_eq!(Size::Text("512MiB".into()).bytes()?, 512 << 20);
/// assert_eq!(Size::Text("1.5 GiB".into()).bytes()?, 3 << 29);
/// assert_eq!(Size::Bytes(4096).bytes()?, 4096);
/// assert!(Size::Text("512MB".into()).bytes().is_err()); // powers of 1000 or 1024? Say which.
/// # Ok::<(), goondan_base::sandbox::LimitError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Size {
    /// A number of bytes.
    Bytes(u64),
    /// A number with a unit: B, KiB, MiB, GiB, TiB (or K, M, G, T, Ki, Mi, Gi, Ti).
    Text(String),
}

impl Size {
    /// The number of bytes.
    pub fn bytes(&self) -> Result<u64, LimitError> {
        match self {
            Self::Bytes(bytes) => Ok(*bytes),
            Self::Text(text) => parse_size(text),
        }
    }

    fn from_value(value: &serde_json::Value) -> Result<Self, LimitError> {
        match value {
            serde_json::Value::String(text) => Ok(Self::Text(text.clone())),
            other => count_of(Resource::Memory, other).map(Self::Bytes),
        }
    }
}

/// A whole number of processes.
fn count(value: &serde_json::Value) -> Result<u64, LimitError> {
    count_of(Resource::Processes, value)
}

/// A whole number, with an error that says what is wrong with anything else.
fn count_of(resource: Resource, value: &serde_json::Value) -> Result<u64, LimitError> {
    if let Some(n) = value.as_u64() {
        return Ok(n);
    }
    let shown_value = shown(&value.to_string());
    match value.as_f64() {
        Some(n) if n <= 0.0 => Err(LimitError::Zero { resource }),
        Some(n) if n > 1e18 => Err(LimitError::TooLarge {
            resource,
            value: shown_value,
            most: match resource {
                Resource::Memory => size_text(MOST_MEMORY),
                _ => MOST_PROCESSES.to_string(),
            },
        }),
        Some(_) => Err(LimitError::Malformed {
            resource,
            value: shown_value,
            why: "expected a whole number",
        }),
        None => Err(LimitError::Malformed {
            resource,
            value: shown_value,
            why: match resource {
                Resource::Memory => "expected a number of bytes or a size such as \"512MiB\"",
                _ => "expected a whole number",
            },
        }),
    }
}

/// Bytes from a text such as `512MiB`, `1.5 GiB` or `4096`.
fn parse_size(text: &str) -> Result<u64, LimitError> {
    let resource = Resource::Memory;
    let malformed = |why| LimitError::Malformed {
        resource,
        value: shown(text),
        why,
    };
    let too_large = || LimitError::TooLarge {
        resource,
        value: shown(text),
        most: size_text(MOST_MEMORY),
    };
    let trimmed = text.trim();
    let end = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(end);
    let scale: u64 = match unit.trim_start().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "ki" | "kib" => 1 << 10,
        "m" | "mi" | "mib" => 1 << 20,
        "g" | "gi" | "gib" => 1 << 30,
        "t" | "ti" | "tib" => 1 << 40,
        "kb" | "mb" | "gb" | "tb" => {
            return Err(malformed("write KiB, MiB, GiB or TiB (powers of 1024)"));
        }
        _ if trimmed.starts_with('-') => return Err(LimitError::Zero { resource }),
        _ => {
            return Err(malformed(
                "expected a number with an optional unit B, KiB, MiB, GiB or TiB",
            ));
        }
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty()
        || !digits(whole)
        || !digits(fraction)
        || fraction.len() > 9
        || (number.contains('.') && fraction.is_empty())
    {
        return Err(malformed(
            "expected a number with an optional unit B, KiB, MiB, GiB or TiB",
        ));
    }
    // Only digits: a whole part that does not parse is too long for 64 bits.
    let whole: u64 = whole.parse().map_err(|_| too_large())?;
    let mut bytes = whole.checked_mul(scale).ok_or_else(too_large)?;
    if !fraction.is_empty() {
        let numerator: u128 = fraction
            .parse()
            .map_err(|_| malformed("a fraction too long"))?;
        let denominator = 10u128.pow(u32::try_from(fraction.len()).unwrap_or(9));
        let part =
            u64::try_from(numerator * u128::from(scale) / denominator).map_err(|_| too_large())?;
        bytes = bytes.checked_add(part).ok_or_else(too_large)?;
    }
    Ok(bytes)
}

/// A size as people read it: in the largest binary unit that holds it whole (`512 MiB`,
/// `1536 MiB`), else in bytes.
pub(crate) fn size_text(bytes: u64) -> String {
    for (unit, name) in [
        (1u64 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{} {name}", bytes / unit);
        }
    }
    format!("{bytes} bytes")
}

fn cores_text(millis: u32) -> String {
    let cores = f64::from(millis) / 1000.0;
    if millis == 1000 {
        "1 core".to_owned()
    } else {
        format!("{cores} cores")
    }
}

/// The start of what was written, for a message of bounded length.
fn shown(text: &str) -> String {
    let mut shown: String = text.chars().take(32).collect();
    if shown.len() < text.len() {
        shown.push_str("...");
    }
    shown
}

/// A cgroup version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CgroupVersion {
    /// The legacy hierarchies, one per controller (or a few together).
    #[serde(rename = "v1")]
    V1,
    /// The unified hierarchy.
    #[serde(rename = "v2")]
    V2,
}

impl std::fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::V1 => "cgroup v1",
            Self::V2 => "cgroup v2",
        })
    }
}

/// What a JSON value is, for a bundle's error messages.
pub(super) fn kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a map",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_are_read_with_binary_units() {
        for (text, bytes) in [
            ("4096", 4096),
            ("4096B", 4096),
            ("512MiB", 512 << 20),
            ("512 MiB", 512 << 20),
            ("512mib", 512 << 20),
            ("512M", 512 << 20),
            ("512Mi", 512 << 20),
            ("1.5GiB", 3 << 29),
            ("0.5 KiB", 512),
            ("2TiB", 2 << 40),
            (" 64 KiB ", 64 << 10),
            ("1.000000001GiB", (1 << 30) + 1),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in [
            "",
            "MiB",
            "512MB",
            "5 12MiB",
            "1.GiB",
            ".5GiB",
            "1..5GiB",
            "1.5.5GiB",
            "12 parsecs",
            "0x100",
            "1e9",
            "1.0000000001GiB",
            "½GiB",
        ] {
            assert!(
                matches!(parse_size(bad), Err(LimitError::Malformed { .. })),
                "{bad}: {:?}",
                parse_size(bad)
            );
        }
        assert_eq!(
            parse_size("-5MiB"),
            Err(LimitError::Zero {
                resource: Resource::Memory
            })
        );
        for huge in [
            "99999999999999999999999",
            "16777216TiB",
            "18446744073709551615.9999GiB",
        ] {
            assert!(
                matches!(parse_size(huge), Err(LimitError::TooLarge { .. })),
                "{huge}: {:?}",
                parse_size(huge)
            );
        }
        let long = "9".repeat(100_000);
        let err = parse_size(&long).unwrap_err().to_string();
        assert!(err.len() < 200, "a bounded message: {err}");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size_text(512 << 20), "512 MiB");
        assert_eq!(size_text(3 << 29), "1536 MiB");
        assert_eq!(size_text(4 << 30), "4 GiB");
        assert_eq!(size_text(1000), "1000 bytes");
    }

    #[test]
    fn limits_are_checked_when_they_are_made() {
        let limits = Limits::default();
        assert_eq!(limits.memory(), DEFAULT_MEMORY);
        assert_eq!(limits.processes(), DEFAULT_PROCESSES);
        assert_eq!(limits.cpu(), None);
        assert!(!Resource::ALL.into_iter().any(|r| limits.is_set(r)));
        assert!(matches!(
            limits.with_memory(0),
            Err(LimitError::Zero { .. })
        ));
        assert!(matches!(
            limits.with_memory(512),
            Err(LimitError::TooSmall { .. })
        ));
        assert!(matches!(
            limits.with_memory(u64::MAX),
            Err(LimitError::TooLarge { .. })
        ));
        assert!(matches!(
            limits.with_processes(0),
            Err(LimitError::Zero { .. })
        ));
        assert!(matches!(
            limits.with_processes(1 << 40),
            Err(LimitError::TooLarge { .. })
        ));
        assert!(matches!(limits.with_cpu(0.0), Err(LimitError::Zero { .. })));
        assert!(matches!(
            limits.with_cpu(-1.0),
            Err(LimitError::Zero { .. })
        ));
        assert!(matches!(
            limits.with_cpu(f64::NAN),
            Err(LimitError::Malformed { .. })
        ));
        assert!(matches!(
            limits.with_cpu(f64::INFINITY),
            Err(LimitError::TooLarge { .. })
        ));
        assert!(matches!(
            limits.with_cpu(0.001),
            Err(LimitError::TooSmall { .. })
        ));
        assert_eq!(limits.with_cpu(1.5).unwrap().cpu(), Some(1.5));
        assert_eq!(limits.with_processes(1).unwrap().processes(), 1);
    }

    #[test]
    fn a_bundles_limits_are_read_and_bad_ones_refused() {
        let limits =
            Limits::from_bundle(&json!({"memory": 1 << 30, "processes": 64, "cpu": 2})).unwrap();
        assert_eq!(limits.memory(), 1 << 30);
        assert_eq!(limits.processes(), 64);
        assert_eq!(limits.cpu(), Some(2.0));
        assert!(Limits::from_bundle(&json!({})).unwrap() == Limits::default());
        for bad in [
            json!("512MiB"),
            json!({"memory": 0}),
            json!({"memory": "0"}),
            json!({"memory": -1}),
            json!({"memory": 1.5}),
            json!({"memory": "1e9"}),
            json!({"memory": true}),
            json!({"memory": "x".repeat(1_000_000)}),
            json!({"memory": 1e300}),
            json!({"memory": "100000TiB"}),
            json!({"processes": 0}),
            json!({"processes": -3}),
            json!({"processes": 2.5}),
            json!({"processes": "64"}),
            json!({"processes": 1e30}),
            json!({"cpu": 0}),
            json!({"cpu": "1"}),
            json!({"cpu": 1e300}),
            json!({"swap": 1}),
            json!({"y".repeat(100_000): 1}),
        ] {
            let err = Limits::from_bundle(&bad).unwrap_err();
            assert!(err.to_string().len() < 200, "a bounded message: {err}");
        }
    }

    #[test]
    fn a_call_may_only_lower_its_tools_limits() {
        let tool = Limits::default().with_memory(1 << 30).unwrap();
        let asked =
            |value: serde_json::Value| -> LimitsInput { serde_json::from_value(value).unwrap() };
        let lowered = tool
            .lowered(&asked(
                json!({"memory": "64MiB", "processes": 64, "cpu": 0.5}),
            ))
            .unwrap();
        assert_eq!(lowered.memory(), 64 << 20);
        assert_eq!(lowered.processes(), 64);
        assert_eq!(lowered.cpu(), Some(0.5));
        assert!(lowered.is_set(Resource::Processes));
        assert_eq!(tool.lowered(&LimitsInput::default()).unwrap(), tool);
        for above in [
            json!({"memory": "2GiB"}),
            json!({"processes": DEFAULT_PROCESSES + 1}),
        ] {
            assert!(
                matches!(
                    tool.lowered(&asked(above.clone())),
                    Err(LimitError::AboveBound { .. })
                ),
                "{above}"
            );
        }
        let capped = tool.with_cpu(1.0).unwrap();
        assert!(matches!(
            capped.lowered(&asked(json!({"cpu": 2}))),
            Err(LimitError::AboveBound {
                resource: Resource::Cpu,
                ..
            })
        ));
        assert!(matches!(
            tool.lowered(&asked(json!({"processes": 0}))),
            Err(LimitError::Zero { .. })
        ));
    }

    #[test]
    fn a_tools_limits_stay_within_its_policys() {
        let policy = Limits::default().with_memory(1 << 30).unwrap();
        let tool = Limits::default()
            .with_memory(8 << 30)
            .unwrap()
            .with_processes(100)
            .unwrap()
            .with_cpu(2.0)
            .unwrap();
        let within = tool.within(&policy);
        assert_eq!(within.memory(), 1 << 30);
        assert_eq!(within.processes(), 100);
        assert_eq!(within.cpu(), Some(2.0));
        assert_eq!(
            Limits::default().within(&Limits::default()),
            Limits::default()
        );
    }
}

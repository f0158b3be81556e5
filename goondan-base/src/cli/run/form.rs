//! A form at the terminal: what a tool (or a bridged MCP server, by elicitation) asks the
//! person mid-call. MCP's form schemas are flat objects of primitive fields (text, with an
//! optional `format`; boolean; integer; number; a choice of `enum` values or of `oneOf`
//! `{const, title}`; a list of such choices); [`Form::of`] reads one, and the terminal asks
//! its fields one line each: [`Field::prompt`] says what is asked, [`Field::read`] reads the
//! line, with the field's default on an empty line.

use serde_json::{Map, Number, Value};

/// The prompt before the fields: fill the form in, decline it, or dismiss it.
pub(crate) const FORM_PROMPT: &str = "fill it in [y] / decline [n] / cancel [c]: ";

/// The most fields a form may have at the terminal.
const MAX_FIELDS: usize = 64;
/// The most choices one field may offer at the terminal.
const MAX_CHOICES: usize = 256;

/// A form the terminal can ask.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Form {
    fields: Vec<Field>,
}

/// One field of a [`Form`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    name: String,
    title: Option<String>,
    description: Option<String>,
    kind: Kind,
    required: bool,
    default: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Text {
        format: Option<String>,
        min_length: Option<u64>,
        max_length: Option<u64>,
    },
    Boolean,
    Integer {
        min: Option<f64>,
        max: Option<f64>,
    },
    Number {
        min: Option<f64>,
        max: Option<f64>,
    },
    /// One of the choices.
    Choice(Vec<Choice>),
    /// Some of the choices, between `min` and `max` of them.
    Choices {
        options: Vec<Choice>,
        min: Option<u64>,
        max: Option<u64>,
    },
}

/// A value to choose, and its title when the schema gives one.
#[derive(Debug, Clone, PartialEq)]
struct Choice {
    value: String,
    title: Option<String>,
}

/// What the person says to a form before its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opening {
    /// Fill it in.
    Fill,
    /// Say no.
    Decline,
    /// Dismiss it.
    Cancel,
}

/// Reads the line typed at [`FORM_PROMPT`]; `None` when it is none of the answers.
pub(crate) fn opening(line: &str) -> Option<Opening> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "fill" => Some(Opening::Fill),
        "n" | "no" | "decline" => Some(Opening::Decline),
        "c" | "cancel" => Some(Opening::Cancel),
        _ => None,
    }
}

impl Form {
    /// The form of the requested schema `schema`; why the terminal cannot ask it otherwise.
    pub(crate) fn of(schema: &Value) -> Result<Self, String> {
        if schema.get("type").is_some_and(|t| t != "object") {
            return Err("the form is not an object".to_owned());
        }
        let properties = match schema.get("properties") {
            None => return Ok(Self { fields: Vec::new() }),
            Some(Value::Object(p)) => p,
            Some(_) => return Err("the form's `properties` is not an object".to_owned()),
        };
        if properties.len() > MAX_FIELDS {
            return Err(format!("the form has more than {MAX_FIELDS} fields"));
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let fields = properties
            .iter()
            .map(|(name, property)| {
                Field::of(name, property, required.contains(&name.as_str()))
                    .map_err(|why| format!("field `{name}`: {why}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { fields })
    }

    /// The fields, in the schema's order.
    pub(crate) fn fields(&self) -> &[Field] {
        &self.fields
    }
}

impl Field {
    fn of(name: &str, property: &Value, required: bool) -> Result<Self, String> {
        let text = |key: &str| property.get(key).and_then(Value::as_str).map(str::to_owned);
        let unsigned = |key: &str| property.get(key).and_then(Value::as_u64);
        let float = |key: &str| property.get(key).and_then(Value::as_f64);
        let kind = match property.get("type").and_then(Value::as_str) {
            Some("string") => match choices(property)? {
                Some(options) => Kind::Choice(options),
                None => Kind::Text {
                    format: text("format"),
                    min_length: unsigned("minLength"),
                    max_length: unsigned("maxLength"),
                },
            },
            Some("boolean") => Kind::Boolean,
            Some("integer") => Kind::Integer {
                min: float("minimum"),
                max: float("maximum"),
            },
            Some("number") => Kind::Number {
                min: float("minimum"),
                max: float("maximum"),
            },
            Some("array") => {
                let items = property.get("items").unwrap_or(&Value::Null);
                match choices(items)? {
                    Some(options) => Kind::Choices {
                        options,
                        min: unsigned("minItems"),
                        max: unsigned("maxItems"),
                    },
                    None => return Err("a list whose items are not choices".to_owned()),
                }
            }
            Some(other) => return Err(format!("the type `{other}` is not a form field's")),
            None => return Err("no `type`".to_owned()),
        };
        Ok(Self {
            name: name.to_owned(),
            title: text("title"),
            description: text("description"),
            kind,
            required,
            default: property.get("default").cloned(),
        })
    }

    /// The field's name in the form.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// What the terminal shows before the person types the field's value: its title or name,
    /// its description, what it takes, its default; `*` marks a required field.
    pub(crate) fn prompt(&self) -> String {
        let mut text = format!("  {}", self.title.as_deref().unwrap_or(&self.name));
        if self.required {
            text.push('*');
        }
        if let Some(description) = &self.description {
            text.push_str(&format!(" ({description})"));
        }
        text.push_str(&format!(" [{}", self.takes()));
        if let Some(default) = &self.default {
            text.push_str(&format!(", default {}", shown(default)));
        }
        text.push_str("]: ");
        text
    }

    /// What the field takes, in a few words.
    fn takes(&self) -> String {
        let range = |min: &Option<f64>, max: &Option<f64>| match (min, max) {
            (Some(a), Some(b)) => format!(" {a}..{b}"),
            (Some(a), None) => format!(" >= {a}"),
            (None, Some(b)) => format!(" <= {b}"),
            (None, None) => String::new(),
        };
        match &self.kind {
            Kind::Text {
                format: Some(f), ..
            } => format!("text, {f}"),
            Kind::Text { .. } => "text".to_owned(),
            Kind::Boolean => "y/n".to_owned(),
            Kind::Integer { min, max } => format!("integer{}", range(min, max)),
            Kind::Number { min, max } => format!("number{}", range(min, max)),
            Kind::Choice(options) => format!("one of {}", listed(options)),
            Kind::Choices { options, .. } => {
                format!("some of {}, comma-separated", listed(options))
            }
        }
    }

    /// The value of the line typed for this field: `Ok(None)` leaves an optional field out;
    /// an empty line takes the default. `Err` says why the line is refused (ask again).
    pub(crate) fn read(&self, line: &str) -> Result<Option<Value>, String> {
        let line = line.trim();
        if line.is_empty() {
            return match (&self.default, self.required) {
                (Some(default), _) => Ok(Some(default.clone())),
                (None, true) => Err("this field is required".to_owned()),
                (None, false) => Ok(None),
            };
        }
        let within = |n: f64, min: &Option<f64>, max: &Option<f64>| {
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                Err(format!("{n} is out of range"))
            } else {
                Ok(())
            }
        };
        let value = match &self.kind {
            Kind::Text {
                format,
                min_length,
                max_length,
            } => {
                let count = line.chars().count() as u64;
                if min_length.is_some_and(|m| count < m) || max_length.is_some_and(|m| count > m) {
                    return Err(format!("{count} characters is too short or too long"));
                }
                check_format(format.as_deref(), line)?;
                Value::from(line)
            }
            Kind::Boolean => match line.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("answer y or n".to_owned()),
            },
            Kind::Integer { min, max } => {
                let n: i64 = line
                    .parse()
                    .map_err(|_| format!("`{line}` is not an integer"))?;
                within(n as f64, min, max)?;
                Value::from(n)
            }
            Kind::Number { min, max } => {
                let n: f64 = line
                    .parse()
                    .map_err(|_| format!("`{line}` is not a number"))?;
                within(n, min, max)?;
                Number::from_f64(n)
                    .map(Value::Number)
                    .ok_or_else(|| format!("`{line}` is not a finite number"))?
            }
            Kind::Choice(options) => Value::from(chosen(options, line)?),
            Kind::Choices { options, min, max } => {
                let picked: Vec<Value> = line
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| chosen(options, s).map(Value::from))
                    .collect::<Result<_, _>>()?;
                let count = picked.len() as u64;
                if min.is_some_and(|m| count < m) || max.is_some_and(|m| count > m) {
                    return Err(format!(
                        "choose between {} and {}",
                        min.unwrap_or(0),
                        max.map_or_else(|| options.len().to_string(), |m| m.to_string())
                    ));
                }
                Value::Array(picked)
            }
        };
        Ok(Some(value))
    }
}

/// The choices of a property: its `enum` values, or its `oneOf`/`anyOf` `{const, title}`;
/// `None` when it offers no choice.
fn choices(property: &Value) -> Result<Option<Vec<Choice>>, String> {
    let options: Vec<Choice> = if let Some(values) = property.get("enum").and_then(Value::as_array)
    {
        let titles = property.get("enumNames").and_then(Value::as_array);
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let value = v.as_str().ok_or("a choice that is not text")?.to_owned();
                let title = titles
                    .and_then(|t| t.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Ok::<_, String>(Choice { value, title })
            })
            .collect::<Result<_, _>>()?
    } else if let Some(options) = property
        .get("oneOf")
        .or_else(|| property.get("anyOf"))
        .and_then(Value::as_array)
    {
        options
            .iter()
            .map(|o| {
                let value = o
                    .get("const")
                    .and_then(Value::as_str)
                    .ok_or("a choice without a text `const`")?
                    .to_owned();
                let title = o.get("title").and_then(Value::as_str).map(str::to_owned);
                Ok::<_, String>(Choice { value, title })
            })
            .collect::<Result<_, _>>()?
    } else {
        return Ok(None);
    };
    if options.is_empty() || options.len() > MAX_CHOICES {
        return Err(format!("between 1 and {MAX_CHOICES} choices are needed"));
    }
    Ok(Some(options))
}

/// The choices as the prompt lists them: `1 Superman, 2 Green Lantern` when titled, else the
/// values.
fn listed(options: &[Choice]) -> String {
    let titled = options.iter().any(|o| o.title.is_some());
    let shown: Vec<String> = options
        .iter()
        .enumerate()
        .map(|(i, o)| match (&o.title, titled) {
            (Some(t), _) => format!("{} {t}", i + 1),
            (None, true) => format!("{} {}", i + 1, o.value),
            (None, false) => o.value.clone(),
        })
        .collect();
    shown.join(", ")
}

/// The value chosen by `typed`: a value, a title (either case) or a choice's number.
fn chosen(options: &[Choice], typed: &str) -> Result<String, String> {
    let by_number = typed
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| options.get(i));
    let found = options
        .iter()
        .find(|o| o.value == typed)
        .or_else(|| {
            options.iter().find(|o| {
                o.value.eq_ignore_ascii_case(typed)
                    || o.title
                        .as_deref()
                        .is_some_and(|t| t.eq_ignore_ascii_case(typed))
            })
        })
        .or(by_number);
    found
        .map(|o| o.value.clone())
        .ok_or_else(|| format!("`{typed}` is not one of {}", listed(options)))
}

/// Checks the formats MCP names (`email`, `uri`, `date`, `date-time`) loosely: what a person
/// mistypes, not every rule of their RFCs.
fn check_format(format: Option<&str>, text: &str) -> Result<(), String> {
    let ok = match format {
        Some("email") => text
            .split_once('@')
            .is_some_and(|(user, host)| !user.is_empty() && host.contains('.')),
        Some("uri") => url::Url::parse(text).is_ok(),
        Some("date") => is_date(text),
        Some("date-time") => text
            .split_once(['T', 't'])
            .is_some_and(|(date, time)| is_date(date) && time.len() >= 5),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{text}` is not a {}",
            format.unwrap_or("valid value")
        ))
    }
}

/// `YYYY-MM-DD`.
fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    matches!(parts.as_slice(), [y, m, d]
        if y.len() == 4 && m.len() == 2 && d.len() == 2
            && [y, m, d].iter().all(|p| p.bytes().all(|b| b.is_ascii_digit()))
            && (1..=12).contains(&m.parse::<u8>().unwrap_or(0))
            && (1..=31).contains(&d.parse::<u8>().unwrap_or(0)))
}

/// A default as the prompt shows it: text bare, lists comma-separated.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// The content of a filled form: each answered field by name.
pub(crate) type Filled = Map<String, Value>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Form {
        Form::of(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "description": "Your name"},
                "check": {"type": "boolean"},
                "email": {"type": "string", "format": "email"},
                "integer": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
                "number": {"type": "number"},
                "friend": {"type": "string", "enum": ["Monica", "Rachel"], "default": "Monica"},
                "hero": {"type": "string", "oneOf": [
                    {"const": "hero-1", "title": "Superman"},
                    {"const": "hero-2", "title": "Green Lantern"}]},
                "fish": {"type": "array", "minItems": 1, "maxItems": 2,
                    "items": {"anyOf": [{"const": "cod", "title": "Cod"},
                        {"const": "eel", "title": "Eel"}, {"const": "ray", "title": "Ray"}]}}
            },
            "required": ["name"]
        }))
        .unwrap()
    }

    fn field<'a>(form: &'a Form, name: &str) -> &'a Field {
        form.fields().iter().find(|f| f.name() == name).unwrap()
    }

    #[test]
    fn each_kind_of_field_reads_its_line_or_says_why_not() {
        let form = form();
        let name = field(&form, "name");
        assert_eq!(name.prompt(), "  Name* (Your name) [text]: ");
        assert!(name.read("").is_err(), "required");
        assert_eq!(name.read(" Ada ").unwrap(), Some(json!("Ada")));
        let check = field(&form, "check");
        assert_eq!(check.read("y").unwrap(), Some(json!(true)));
        assert_eq!(check.read("").unwrap(), None, "optional, no default");
        assert!(check.read("maybe").is_err());
        let email = field(&form, "email");
        assert!(email.read("ada").is_err());
        assert_eq!(
            email.read("ada@example.com").unwrap(),
            Some(json!("ada@example.com"))
        );
        let integer = field(&form, "integer");
        assert_eq!(integer.prompt(), "  integer [integer 1..100, default 42]: ");
        assert_eq!(integer.read("").unwrap(), Some(json!(42)));
        assert!(integer.read("101").is_err() && integer.read("1.5").is_err());
        assert_eq!(
            field(&form, "number").read("2.5").unwrap(),
            Some(json!(2.5))
        );
        let friend = field(&form, "friend");
        assert_eq!(friend.read("rachel").unwrap(), Some(json!("Rachel")));
        assert!(friend.read("Joey").is_err());
        let hero = field(&form, "hero");
        assert_eq!(
            hero.prompt(),
            "  hero [one of 1 Superman, 2 Green Lantern]: "
        );
        assert_eq!(hero.read("2").unwrap(), Some(json!("hero-2")));
        assert_eq!(hero.read("superman").unwrap(), Some(json!("hero-1")));
        let fish = field(&form, "fish");
        assert_eq!(fish.read("1, Eel").unwrap(), Some(json!(["cod", "eel"])));
        assert!(fish.read("cod, eel, ray").is_err(), "at most 2");
    }

    #[test]
    fn a_form_the_terminal_cannot_ask_says_why() {
        for (schema, why) in [
            (json!({"type": "array"}), "not an object"),
            (
                json!({"type": "object", "properties": {"a": {"type": "object"}}}),
                "field `a`",
            ),
            (
                json!({"properties": {"a": {"type": "array", "items": {"type": "string"}}}}),
                "not choices",
            ),
            (
                json!({"properties": {"a": {"type": "string", "enum": []}}}),
                "choices are needed",
            ),
        ] {
            let err = Form::of(&schema).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
        assert_eq!(opening(" Y "), Some(Opening::Fill));
        assert_eq!(opening("decline"), Some(Opening::Decline));
        assert_eq!(opening("c"), Some(Opening::Cancel));
        assert_eq!(opening("what"), None);
    }
}

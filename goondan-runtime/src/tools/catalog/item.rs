//! [`CatalogItem`]: one tool as one Step shows it: the registry entry it wraps (or only a
//! name, for an item made by hand), plus whatever the Step changed of it.

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::tools::annotations::ExportAnnotations;
use crate::tools::name::ToolName;
use crate::tools::output_schema::OutputSchema;
use crate::tools::registry::RegisteredExport;
use crate::tools::schema::ArgValidator;
use crate::tools::tool::ToolSource;

/// What an item shows when nothing is overridden.
#[derive(Clone)]
enum Base {
    /// Built from a registry entry: its name and values.
    Entry(Arc<RegisteredExport>),
    /// Made by hand or read from JSON: a name and nothing else.
    Named(ToolName),
}

/// One field of an item as the Step left it.
#[derive(Clone, Default)]
enum Field<T> {
    /// Not overridden: the entry's value (none for an item without an entry).
    #[default]
    Inherited,
    /// Overridden: this value, or none at all (a removed description, say).
    Set(Option<T>),
}

impl<T> Field<T> {
    /// An override from JSON: a present field is set, an absent one is not.
    fn from_json(value: Option<T>) -> Self {
        value.map_or(Self::Inherited, |v| Self::Set(Some(v)))
    }

    /// The overriding value (`Some(None)`: overridden with none), or `None` when inherited.
    fn overridden(&self) -> Option<Option<&T>> {
        match self {
            Self::Inherited => None,
            Self::Set(value) => Some(value.as_ref()),
        }
    }
}

/// What a step middleware (or the maker of a hand-made item) set. Shared values, never copies.
#[derive(Clone, Default)]
struct Overrides {
    /// The name a toolset gave the entry ([`CatalogItem::renamed`]).
    name: Option<ToolName>,
    description: Field<Arc<str>>,
    parameters: Field<ShownParameters>,
    source: Field<Arc<ToolSource>>,
    annotations: Field<Arc<ExportAnnotations>>,
    output_schema: Field<Arc<OutputSchema>>,
}

/// A parameter schema a Step shows in place of its entry's, and its validator: the executor
/// checks a call against it (then against the export's own), compiled at the first call of
/// the catalog that shows it and shared by the catalog's clones.
#[derive(Clone)]
pub(crate) struct ShownParameters {
    schema: Arc<Value>,
    validator: Arc<OnceLock<ArgValidator>>,
}

impl fmt::Debug for ShownParameters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ShownParameters")
            .field(&self.schema)
            .finish()
    }
}

impl ShownParameters {
    fn new(schema: Arc<Value>) -> Self {
        Self {
            schema,
            validator: Arc::default(),
        }
    }

    /// The schema shown.
    pub(crate) fn schema(&self) -> &Arc<Value> {
        &self.schema
    }

    /// Its validator.
    pub(crate) fn validator(&self) -> &ArgValidator {
        self.validator
            .get_or_init(|| ArgValidator::new(&self.schema))
    }
}

/// One entry of a [`ToolCatalog`](super::ToolCatalog), serialised as
/// `{name, description?, parameters?, source?, annotations?, outputSchema?}` (CAT-6).
///
/// An item built by the catalog wraps its registry entry and shows the entry's values
/// without copying them; a step middleware changes what one Step shows by overriding a value
/// on a copy of the item and [`push`](super::ToolCatalog::push)ing it back. The registry entry
/// itself never changes (REG-3). An item can also be made by hand with [`new`](Self::new):
/// it then has only what is set on it.
///
/// Reading: [`name`](Self::name), [`description`](Self::description),
/// [`parameters`](Self::parameters), [`source`](Self::source),
/// [`annotations`](Self::annotations) and [`output_schema`](Self::output_schema) give the
/// override if there is one, else the entry's value. Writing, for each of those but the name
/// (which is the item's identity): `set_*` overrides the value, `clear_*` overrides it with
/// none (the item then shows no description, say, whatever its entry has), and `with_*` is
/// `set_*` for building an item by value.
///
/// Two items are equal when they show the same values; where the values come from does not
/// matter.
///
/// ```
/// use goondan_runtime::prelude::*;
/// use goondan_runtime::{CatalogItem, ToolCatalog, ToolName};
///
/// /// Echoes.
/// #[tool(name = "echo")]
/// pub fn echo(text: String) -> String { text }
///
/// let registry = ToolRegistry::builder().tool(echo::TOOL).build()?;
/// let mut catalog = ToolCatalog::build(&registry, ["echo"])?;
/// let mut item = catalog.items()[0].clone();
/// assert_eq!(item.description(), Some("Echoes."));
///
/// // A step middleware rewords the description for this Step only.
/// item.set_description("Repeats the text back.");
/// catalog.push(item);
/// let shown = catalog.get("echo__echo").unwrap();
/// assert_eq!(shown.description(), Some("Repeats the text back."));
/// // What it did not override is still the entry's.
/// assert!(shown.parameters().is_some());
///
/// // Made by hand: only what is set.
/// let by_hand = CatalogItem::new(ToolName::new("notes", "add")?)
///     .with_description("Adds a note.")
///     .with_parameters(serde_json::json!({"type": "object"}));
/// assert!(by_hand.entry().is_none() && by_hand.source().is_none());
/// assert_eq!(serde_json::to_value(&by_hand)?, serde_json::json!({
///     "name": "notes__add", "description": "Adds a note.", "parameters": {"type": "object"}}));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Deserialize)]
// Read back as an item made by hand: no registry entry, every field present set.
#[serde(from = "Listed")]
pub struct CatalogItem {
    base: Base,
    overrides: Overrides,
}

impl CatalogItem {
    /// An item made by hand, with only a name: it has no registry entry, so a call to it is
    /// looked up in the registry by name.
    pub fn new(name: ToolName) -> Self {
        Self {
            base: Base::Named(name),
            overrides: Overrides::default(),
        }
    }

    /// The item of a registry entry: the entry's values, nothing overridden.
    pub(crate) fn from_entry(entry: &Arc<RegisteredExport>) -> Self {
        Self {
            base: Base::Entry(Arc::clone(entry)),
            overrides: Overrides::default(),
        }
    }

    /// The registry entry the item was built from; `None` for an item made by hand or read
    /// from JSON.
    pub fn entry(&self) -> Option<&Arc<RegisteredExport>> {
        match &self.base {
            Base::Entry(entry) => Some(entry),
            Base::Named(_) => None,
        }
    }

    /// The full `{resource}__{export}` name.
    pub fn name(&self) -> &ToolName {
        if let Some(name) = &self.overrides.name {
            return name;
        }
        match &self.base {
            Base::Entry(entry) => entry.name(),
            Base::Named(name) => name,
        }
    }

    /// The item under another name, as a toolset shows it: a call to
    /// `name` runs the item's entry. The name is the new item's identity.
    ///
    /// ```
    /// use goondan_runtime::prelude::*;
    /// use goondan_runtime::{ToolCatalog, ToolName};
    ///
    /// /// Echoes.
    /// #[tool(name = "echo")]
    /// pub fn echo(text: String) -> String { text }
    ///
    /// let registry = ToolRegistry::builder().tool(echo::TOOL).build()?;
    /// let item = ToolCatalog::build(&registry, ["echo"])?.items()[0].clone();
    /// let renamed = item.renamed(ToolName::parse("say__back")?);
    /// assert_eq!(renamed.name().as_str(), "say__back");
    /// assert_eq!(renamed.entry().map(|e| e.name().as_str()), Some("echo__echo"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn renamed(mut self, name: ToolName) -> Self {
        self.overrides.name = Some(name);
        self
    }

    /// What the model reads about the tool.
    pub fn description(&self) -> Option<&str> {
        match self.overrides.description.overridden() {
            Some(set) => set.map(|d| &**d),
            None => self.entry()?.export().description(),
        }
    }

    /// The parameter schema.
    pub fn parameters(&self) -> Option<&Arc<Value>> {
        match self
            .overrides
            .parameters
            .overridden()
            .map(|o| o.map(ShownParameters::schema))
        {
            Some(set) => set,
            None => Some(self.entry()?.export().parameters_arc()),
        }
    }

    /// Where the tool comes from.
    pub fn source(&self) -> Option<&ToolSource> {
        match self.overrides.source.overridden() {
            Some(set) => set.map(|s| &**s),
            None => Some(self.entry()?.resource().source()),
        }
    }

    /// The export's title and effect hints; an entry that says nothing has none.
    pub fn annotations(&self) -> Option<&Arc<ExportAnnotations>> {
        match self.overrides.annotations.overridden() {
            Some(set) => set,
            None => Some(self.entry()?.export().annotations_arc()).filter(|a| !a.is_empty()),
        }
    }

    /// The export's published output schema.
    pub fn output_schema(&self) -> Option<&Arc<OutputSchema>> {
        match self.overrides.output_schema.overridden() {
            Some(set) => set,
            None => self.entry()?.export().output_schema(),
        }
    }

    /// The export's page and who may call it (MCP Apps): the entry's, never overridden by a
    /// Step; an item made by hand has none.
    pub fn ui(&self) -> Option<&crate::tools::ui::ExportUi> {
        self.entry()?.export().ui()
    }

    /// Overrides the description.
    pub fn set_description(&mut self, description: impl Into<Arc<str>>) -> &mut Self {
        self.overrides.description = Field::Set(Some(description.into()));
        self
    }

    /// Shows no description, whatever the entry has.
    pub fn clear_description(&mut self) -> &mut Self {
        self.overrides.description = Field::Set(None);
        self
    }

    /// [`set_description`](Self::set_description), by value.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<Arc<str>>) -> Self {
        self.set_description(description);
        self
    }

    /// The parameter schema the Step shows in place of the entry's, when it shows one (the
    /// executor checks calls against it).
    pub(crate) fn shown_parameters(&self) -> Option<&ShownParameters> {
        self.overrides.parameters.overridden().flatten()
    }

    /// Overrides the parameter schema (a [`Value`], or an `Arc` of one to share it). Calls
    /// are then checked against it, as well as against the export's own schema.
    pub fn set_parameters(&mut self, parameters: impl Into<Arc<Value>>) -> &mut Self {
        self.overrides.parameters = Field::Set(Some(ShownParameters::new(parameters.into())));
        self
    }

    /// Shows no parameter schema (the dialects send the empty object schema).
    pub fn clear_parameters(&mut self) -> &mut Self {
        self.overrides.parameters = Field::Set(None);
        self
    }

    /// [`set_parameters`](Self::set_parameters), by value.
    #[must_use]
    pub fn with_parameters(mut self, parameters: impl Into<Arc<Value>>) -> Self {
        self.set_parameters(parameters);
        self
    }

    /// Overrides where the tool comes from.
    pub fn set_source(&mut self, source: impl Into<Arc<ToolSource>>) -> &mut Self {
        self.overrides.source = Field::Set(Some(source.into()));
        self
    }

    /// Shows no source.
    pub fn clear_source(&mut self) -> &mut Self {
        self.overrides.source = Field::Set(None);
        self
    }

    /// [`set_source`](Self::set_source), by value.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<Arc<ToolSource>>) -> Self {
        self.set_source(source);
        self
    }

    /// Overrides the title and effect hints.
    pub fn set_annotations(&mut self, annotations: impl Into<Arc<ExportAnnotations>>) -> &mut Self {
        self.overrides.annotations = Field::Set(Some(annotations.into()));
        self
    }

    /// Shows no title and no effect hints.
    pub fn clear_annotations(&mut self) -> &mut Self {
        self.overrides.annotations = Field::Set(None);
        self
    }

    /// [`set_annotations`](Self::set_annotations), by value.
    #[must_use]
    pub fn with_annotations(mut self, annotations: impl Into<Arc<ExportAnnotations>>) -> Self {
        self.set_annotations(annotations);
        self
    }

    /// Overrides the published output schema.
    pub fn set_output_schema(&mut self, schema: impl Into<Arc<OutputSchema>>) -> &mut Self {
        self.overrides.output_schema = Field::Set(Some(schema.into()));
        self
    }

    /// Shows no output schema.
    pub fn clear_output_schema(&mut self) -> &mut Self {
        self.overrides.output_schema = Field::Set(None);
        self
    }

    /// [`set_output_schema`](Self::set_output_schema), by value.
    #[must_use]
    pub fn with_output_schema(mut self, schema: impl Into<Arc<OutputSchema>>) -> Self {
        self.set_output_schema(schema);
        self
    }

    /// The values the item shows, borrowed: its JSON form and its identity for equality.
    fn shown(&self) -> Shown<'_> {
        Shown {
            name: self.name(),
            description: self.description(),
            parameters: self.parameters(),
            source: self.source(),
            annotations: self.annotations(),
            output_schema: self.output_schema(),
        }
    }
}

/// An item's values as it shows them, borrowed (CAT-6 when serialised). The shared values
/// stay behind their `Arc`: equal pointers compare without walking the schemas.
#[derive(Debug, PartialEq, Serialize)]
struct Shown<'a> {
    name: &'a ToolName,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<&'a Arc<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a ToolSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a Arc<ExportAnnotations>>,
    #[serde(rename = "outputSchema", skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a Arc<OutputSchema>>,
}

/// An item as JSON gives it (CAT-6).
#[derive(Deserialize)]
struct Listed {
    name: ToolName,
    description: Option<Arc<str>>,
    parameters: Option<Arc<Value>>,
    source: Option<Arc<ToolSource>>,
    annotations: Option<Arc<ExportAnnotations>>,
    #[serde(rename = "outputSchema")]
    output_schema: Option<Arc<OutputSchema>>,
}

impl From<Listed> for CatalogItem {
    fn from(listed: Listed) -> Self {
        Self {
            base: Base::Named(listed.name),
            overrides: Overrides {
                name: None,
                description: Field::from_json(listed.description),
                parameters: Field::from_json(listed.parameters.map(ShownParameters::new)),
                source: Field::from_json(listed.source),
                annotations: Field::from_json(listed.annotations),
                output_schema: Field::from_json(listed.output_schema),
            },
        }
    }
}

impl Serialize for CatalogItem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.shown().serialize(serializer)
    }
}

/// Equal when the items show the same values, wherever those come from.
impl PartialEq for CatalogItem {
    fn eq(&self, other: &Self) -> bool {
        self.shown() == other.shown()
    }
}

impl fmt::Debug for CatalogItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = self.shown();
        f.debug_struct("CatalogItem")
            .field("name", shown.name)
            .field("description", &shown.description)
            .field("parameters", &shown.parameters)
            .field("source", &shown.source)
            .field("annotations", &shown.annotations)
            .field("output_schema", &shown.output_schema)
            .field("from_entry", &self.entry().is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::catalog::ToolCatalog;
    use crate::tools::error::ToolError;
    use crate::tools::handler::handler_fn;
    use crate::tools::registry::ToolRegistry;
    use crate::tools::tool::{Export, Tool};

    /// A registry with `text__upper`: a description, a schema, hints and an output schema.
    fn registry() -> ToolRegistry {
        let output = serde_json::from_value::<OutputSchema>(json!({
            "type": "object", "properties": {"text": {"type": "string"}}}))
        .unwrap();
        let upper = Export::new(
            "upper",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            handler_fn(|_ctx, _args| async { Ok::<_, ToolError>(()) }),
        )
        .with_description("Uppercases.")
        .with_annotations(ExportAnnotations::new().title("Upper").read_only(true))
        .with_output_schema_value(output);
        let tool = Tool::builder("text").export(upper).build().unwrap();
        ToolRegistry::builder().tool(tool).build().unwrap()
    }

    fn built(registry: &ToolRegistry) -> CatalogItem {
        let catalog = ToolCatalog::build(registry, ["text"]).unwrap();
        catalog.get("text__upper").unwrap().clone()
    }

    /// The item's JSON as the fields of the catalog item had it (CAT-6).
    fn built_json() -> Value {
        json!({
            "name": "text__upper",
            "description": "Uppercases.",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
            "source": {"type": "config", "name": "text"},
            "annotations": {"title": "Upper", "readOnly": true},
            "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        })
    }

    #[test]
    fn a_built_item_shows_its_entry_without_copying_it() {
        let registry = registry();
        let item = built(&registry);
        let entry = registry.get("text__upper").unwrap();
        let export = entry.export();
        assert!(Arc::ptr_eq(item.entry().unwrap(), &entry));
        assert_eq!(item.name().as_str(), "text__upper");
        assert!(Arc::ptr_eq(
            item.parameters().unwrap(),
            export.parameters_arc()
        ));
        assert!(std::ptr::eq(
            item.description().unwrap(),
            export.description().unwrap()
        ));
        assert!(std::ptr::eq(
            item.source().unwrap(),
            entry.resource().source()
        ));
        assert!(Arc::ptr_eq(
            item.annotations().unwrap(),
            export.annotations_arc()
        ));
        assert!(Arc::ptr_eq(
            item.output_schema().unwrap(),
            export.output_schema().unwrap()
        ));
    }

    #[test]
    fn an_override_wins_and_the_rest_stays_the_entrys() {
        let registry = registry();
        let mut item = built(&registry);
        item.set_description("Shouts.");
        assert_eq!(item.description(), Some("Shouts."));
        // The entry is still behind it, for dispatch, and the rest is still the entry's.
        assert!(item.entry().is_some());
        assert!(item.parameters().is_some());
        assert_eq!(built(&registry).description(), Some("Uppercases."));

        let mut item = built(&registry);
        let schema = json!({"type": "object"});
        item.set_parameters(schema.clone());
        assert_eq!(item.parameters().map(|p| &**p), Some(&schema));

        // Set to an equal copy: still an override, equal to the entry's.
        let mut item = built(&registry);
        let same = Value::clone(item.parameters().unwrap());
        item.set_parameters(same);
        assert_eq!(item, built(&registry));

        // The other values.
        let mut item = built(&registry);
        item.set_annotations(ExportAnnotations::new().destructive(true))
            .clear_output_schema()
            .set_source(ToolSource::extension("late"));
        assert_eq!(item.annotations().unwrap().destructive, Some(true));
        assert!(item.output_schema().is_none());
        assert_eq!(item.source().unwrap().name, "late");
    }

    #[test]
    fn a_cleared_description_is_not_an_untouched_one() {
        let registry = registry();
        let untouched = built(&registry);
        let mut cleared = built(&registry);
        cleared.clear_description();
        assert_eq!(untouched.description(), Some("Uppercases."));
        assert_eq!(cleared.description(), None);
        assert_ne!(cleared, untouched);
        let json = serde_json::to_value(&cleared).unwrap();
        assert!(json.get("description").is_none(), "{json}");

        // A hand-made item has nothing to inherit: cleared or untouched, it shows none.
        let name = ToolName::new("notes", "add").unwrap();
        let mut by_hand = CatalogItem::new(name.clone());
        by_hand.clear_description().clear_parameters();
        assert_eq!(by_hand, CatalogItem::new(name));
    }

    #[test]
    fn json_is_the_fields_json_both_ways() {
        let registry = registry();
        let item = built(&registry);
        assert_eq!(serde_json::to_value(&item).unwrap(), built_json());
        let back: CatalogItem = serde_json::from_value(built_json()).unwrap();
        assert!(back.entry().is_none());
        assert_eq!(back, item);
        assert_eq!(serde_json::to_value(&back).unwrap(), built_json());

        // An entry without hints shows none; an override shows in the JSON.
        let mut item = built(&registry);
        item.clear_annotations().set_description("Shouts.");
        let mut expected = built_json();
        if let Some(o) = expected.as_object_mut() {
            o.remove("annotations");
            o.insert("description".into(), json!("Shouts."));
        }
        assert_eq!(serde_json::to_value(&item).unwrap(), expected);

        let by_hand = CatalogItem::new(ToolName::new("notes", "add").unwrap())
            .with_description("Adds a note.")
            .with_parameters(json!({"type": "object"}))
            .with_source(ToolSource::mcp("mcp", "mcp", Some("notes".into())));
        let by_hand_json = json!({
            "name": "notes__add",
            "description": "Adds a note.",
            "parameters": {"type": "object"},
            "source": {"type": "mcp", "name": "mcp",
                       "mcp": {"extensionName": "mcp", "serverName": "notes"}},
        });
        assert_eq!(serde_json::to_value(&by_hand).unwrap(), by_hand_json);
        let back: CatalogItem = serde_json::from_value(by_hand_json).unwrap();
        assert_eq!(back, by_hand);
        let bare: CatalogItem = serde_json::from_value(json!({"name": "a__b"})).unwrap();
        assert_eq!(
            serde_json::to_value(&bare).unwrap(),
            json!({"name": "a__b"})
        );
    }

    #[test]
    fn equality_compares_what_is_shown_not_where_it_comes_from() {
        let registry = registry();
        let item = built(&registry);
        // The same values by hand, copied.
        let by_hand = CatalogItem::new(item.name().clone())
            .with_description("Uppercases.")
            .with_parameters(Value::clone(item.parameters().unwrap()))
            .with_source(ToolSource::config("text"))
            .with_annotations(ExportAnnotations::new().title("Upper").read_only(true))
            .with_output_schema(OutputSchema::clone(item.output_schema().unwrap()));
        assert_eq!(item, by_hand);
        assert_ne!(item, by_hand.clone().with_description("Other."));
        // Another registry's entry with the same values.
        assert_eq!(item, built(&self::registry()));
    }
}

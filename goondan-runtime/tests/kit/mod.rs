//! The tools the provider round trips call: `weather__current` and `weather__forecast`.

#![allow(dead_code, missing_docs, unreachable_pub)]

use goondan_runtime::testing::TestKit;
use goondan_runtime::{Export, Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Temperature units.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Celsius,
    Fahrenheit,
}

/// Where to look.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Current {
    /// An English city name.
    pub city: String,
    /// Celsius unless given.
    pub unit: Option<Unit>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Forecast {
    pub city: String,
    /// How many days ahead.
    pub days: u8,
}

/// A kit with the weather tool; Atlantis is never found.
pub fn kit() -> TestKit {
    let current = Export::typed("current", |_ctx, input: Current| async move {
        if input.city == "Atlantis" {
            return Err(ToolError::new("city not found: Atlantis")
                .with_code("E_WEATHER_CITY")
                .with_name("CityNotFound")
                .with_suggestion("use a city that exists, e.g. `Seoul`"));
        }
        let unit = match input.unit {
            Some(Unit::Fahrenheit) => "F",
            Some(Unit::Celsius) | None => "C",
        };
        Ok(json!({"city": input.city, "temp": 21, "unit": unit}))
    })
    .with_description("The weather now.");
    let forecast = Export::typed("forecast", |_ctx, input: Forecast| async move {
        Ok::<_, ToolError>(format!("{}: sunny for {} days", input.city, input.days))
    })
    .with_description("The forecast.");
    let tool = Tool::builder("weather")
        .description("Weather.")
        .export(current)
        .export(forecast)
        .build()
        .expect("a valid tool");
    TestKit::with_tools([tool]).expect("a kit")
}

/// A provider fixture.
pub fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/providers/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

// Upper-case names are accepted (NAME-5), and camelCase parameters raise no warning about code
// the author cannot see: the whole file is compiled with every warning denied.
#![deny(warnings)]

use goondan_runtime::prelude::*;

/// Fans, named as the seeds name things.
#[tool(name = "Fans")]
pub mod fans {
    /// Set the fan speed; the property is `fanSpeed`.
    #[export(name = "setFanSpeed")]
    pub fn set_fan_speed(
        /// From 0 to 10.
        #[serde(rename = "fanSpeed")]
        fan_speed: u8,
    ) -> u8 {
        fan_speed
    }

    /// Written in camel case, as in upstream's base package.
    #[allow(non_snake_case)]
    pub fn setChatAction(chatId: i64, actionName: String) -> String {
        format!("{chatId}:{actionName}")
    }

    /// A lone camelCase parameter.
    #[allow(non_snake_case)]
    pub fn downloadFile(fileId: String) -> String {
        fileId
    }
}

fn main() {
    let tool = fans::TOOL.build().unwrap();
    let names: Vec<String> = tool.tool_names().map(|n| n.to_string()).collect();
    assert_eq!(
        names,
        [
            "Fans__setFanSpeed",
            "Fans__setChatAction",
            "Fans__downloadFile"
        ]
    );
    let (_, set) = tool.exports().next().unwrap();
    assert_eq!(
        set.parameters()["required"],
        serde_json::json!(["fanSpeed"])
    );
    let (_, chat) = tool.exports().nth(1).unwrap();
    assert_eq!(
        chat.parameters()["required"],
        serde_json::json!(["chatId", "actionName"])
    );
    let (_, download) = tool.exports().nth(2).unwrap();
    assert_eq!(
        download.parameters()["required"],
        serde_json::json!(["fileId"])
    );
}

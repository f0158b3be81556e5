//! A bundle's `policy.guardrails`: the guardrails the runtime ships, set per Agent or Swarm.
//!
//! ```yaml
//! policy:
//!   guardrails:
//!     secrets: true                  # or {patterns: {ticket: "TCK-[0-9]{6}"}}
//!     allow:
//!       paths: [".", /tmp/shared]     # relative: under the workdir
//!       urls: ["https://docs.rs/", "*.github.com"]
//!       pathArguments: [path, cwd]    # default: DEFAULT_PATH_ARGUMENTS
//! ```

use serde_json::Value;

use super::{AllowList, Guardrails, SecretScanner};
use crate::tools::schema::escape_pointer;

/// A wrong value: the JSON pointer under `policy.guardrails`, and why.
type Wrong = (String, String);

fn wrong(at: &str, why: impl Into<String>) -> Wrong {
    (at.to_owned(), why.into())
}

impl Guardrails {
    /// Reads a bundle's `policy.guardrails` (see the module). On a wrong value, the JSON
    /// pointer under it and why.
    pub(crate) fn from_policy(value: &Value) -> Result<Guardrails, Wrong> {
        let Some(map) = value.as_object() else {
            return Err(wrong(
                "",
                "`policy.guardrails` is a map with `secrets` and `allow`",
            ));
        };
        let mut guardrails = Guardrails::new();
        // The order of the keys does not matter: inputs are checked by `allow`, outputs by
        // `secrets`.
        if let Some(allow) = map.get("allow") {
            guardrails = guardrails.with(allow_list(allow)?);
        }
        if let Some(secrets) = map.get("secrets")
            && let Some(scanner) = secret_scanner(secrets)?
        {
            guardrails = guardrails.with(scanner);
        }
        if let Some(other) = map.keys().find(|k| *k != "allow" && *k != "secrets") {
            return Err(wrong(
                &format!("/{}", escape_pointer(other)),
                format!(
                    "`policy.guardrails` has no setting `{other}` (it takes `secrets` and `allow`)"
                ),
            ));
        }
        Ok(guardrails)
    }
}

fn secret_scanner(value: &Value) -> Result<Option<SecretScanner>, Wrong> {
    match value {
        Value::Bool(false) | Value::Null => return Ok(None),
        Value::Bool(true) => return Ok(Some(SecretScanner::new())),
        Value::Object(_) => {}
        _ => {
            return Err(wrong(
                "/secrets",
                "`secrets` is `true`, `false`, or `{patterns: {NAME: REGEX}}`",
            ));
        }
    }
    let mut scanner = SecretScanner::new();
    for (key, v) in value.as_object().into_iter().flatten() {
        if key != "patterns" {
            return Err(wrong(
                &format!("/secrets/{}", escape_pointer(key)),
                format!("`secrets` has no setting `{key}` (it takes `patterns`)"),
            ));
        }
        let Some(patterns) = v.as_object() else {
            return Err(wrong(
                "/secrets/patterns",
                "`secrets.patterns` maps names to regular expressions",
            ));
        };
        for (name, pattern) in patterns {
            let at = format!("/secrets/patterns/{}", escape_pointer(name));
            let Some(pattern) = pattern.as_str() else {
                return Err(wrong(&at, format!("the pattern of `{name}` is not text")));
            };
            scanner = scanner
                .pattern(name, pattern)
                .map_err(|e| wrong(&at, e.to_string()))?;
        }
    }
    Ok(Some(scanner))
}

fn allow_list(value: &Value) -> Result<AllowList, Wrong> {
    let Some(map) = value.as_object() else {
        return Err(wrong(
            "/allow",
            "`allow` is a map with `paths`, `urls` and `pathArguments`",
        ));
    };
    let texts = |key: &str| -> Result<Vec<&str>, Wrong> {
        let Some(v) = map.get(key) else {
            return Ok(Vec::new());
        };
        let items = v
            .as_array()
            .ok_or_else(|| wrong(&format!("/allow/{key}"), format!("`allow.{key}` is a list")))?;
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str()
                    .filter(|s| !s.trim().is_empty())
                    .ok_or_else(|| {
                        wrong(
                            &format!("/allow/{key}/{i}"),
                            format!("the items of `allow.{key}` are non-empty text"),
                        )
                    })
            })
            .collect()
    };
    let mut allow = AllowList::new();
    for path in texts("paths")? {
        allow = allow.path(path);
    }
    for (i, url) in texts("urls")?.into_iter().enumerate() {
        allow = allow
            .url(url)
            .map_err(|e| wrong(&format!("/allow/urls/{i}"), e.to_string()))?;
    }
    if map.contains_key("pathArguments") {
        allow = allow.path_arguments(texts("pathArguments")?);
    }
    if let Some(other) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "paths" | "urls" | "pathArguments"))
    {
        return Err(wrong(
            &format!("/allow/{}", escape_pointer(other)),
            format!(
                "`allow` has no setting `{other}` (it takes `paths`, `urls` and `pathArguments`)"
            ),
        ));
    }
    Ok(allow)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_policy_sets_both_guardrails() {
        let g = Guardrails::from_policy(&json!({
            "secrets": {"patterns": {"ticket": "TCK-[0-9]{6}"}},
            "allow": {"paths": ["."], "urls": ["docs.rs"], "pathArguments": ["target"]}
        }))
        .unwrap();
        assert_eq!(
            format!("{g:?}"),
            r#"Guardrails { input: ["allow-list"], output: ["secret-scanner"] }"#
        );
        let off = Guardrails::from_policy(&json!({"secrets": false})).unwrap();
        assert!(off.is_empty());
    }

    #[test]
    fn wrong_policies_name_where_and_why() {
        for (policy, at, says) in [
            (json!(true), "", "is a map"),
            (json!({"secret": true}), "/secret", "no setting `secret`"),
            (json!({"secrets": "yes"}), "/secrets", "`secrets` is `true`"),
            (
                json!({"secrets": {"pattern": {}}}),
                "/secrets/pattern",
                "no setting",
            ),
            (
                json!({"secrets": {"patterns": {"x": "("}}}),
                "/secrets/patterns/x",
                "not a usable",
            ),
            (
                json!({"secrets": {"patterns": {"Bad": "x"}}}),
                "/secrets/patterns/Bad",
                "cannot name",
            ),
            (
                json!({"secrets": {"patterns": {"n": 3}}}),
                "/secrets/patterns/n",
                "not text",
            ),
            (json!({"allow": []}), "/allow", "is a map"),
            (
                json!({"allow": {"paths": "."}}),
                "/allow/paths",
                "is a list",
            ),
            (
                json!({"allow": {"paths": ["", "."]}}),
                "/allow/paths/0",
                "non-empty",
            ),
            (
                json!({"allow": {"urls": ["ok.test", "not a host"]}}),
                "/allow/urls/1",
                "cannot be an allowed URL",
            ),
            (
                json!({"allow": {"hosts": []}}),
                "/allow/hosts",
                "no setting `hosts`",
            ),
            (
                json!({"allow": {"pathArguments": [1]}}),
                "/allow/pathArguments/0",
                "non-empty",
            ),
        ] {
            let (pointer, why) = Guardrails::from_policy(&policy).unwrap_err();
            assert_eq!(pointer, at, "{policy}");
            assert!(why.contains(says), "{policy}: {why}");
        }
    }
}

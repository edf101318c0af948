//! rustdoc's JSON output read as a list of public items: kind, path, public fields and
//! variants, `#[non_exhaustive]`, function signatures, trait impls (auto traits included,
//! blanket impls left out). A re-export of an item whose own module is private is listed
//! under its one public path.

use std::collections::BTreeSet;

use serde_json::Value;

pub(crate) struct Lister<'a> {
    pub(crate) doc: &'a Value,
    /// The crate's name as rustdoc writes it (`hare_cc`).
    pub(crate) root: &'a str,
    pub(crate) lines: BTreeSet<String>,
    /// `pub use` items seen: (the module listing it, the public name, the target's id).
    pub(crate) uses: Vec<(String, String, Value)>,
}

impl Lister<'_> {
    fn item(&self, id: &Value) -> &Value {
        let key = match id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        &self.doc["index"][key]
    }

    /// A re-export of an item whose own module is private shows the item itself (fields,
    /// variants, impls) under the re-exported path: that path is the only public one.
    pub(crate) fn inline_private_reexports(&mut self) {
        let uses = std::mem::take(&mut self.uses);
        for (parent, name, id) in uses {
            let key = match &id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let Some(path) = self.doc["paths"][&key]["path"].as_array() else {
                continue;
            };
            let segments: Vec<&str> = path.iter().filter_map(Value::as_str).collect();
            if segments.first() != Some(&self.root) || segments.len() < 2 {
                continue;
            }
            let home = segments[..segments.len() - 1].join("::");
            if home == self.root || self.lines.contains(&format!("mod {home}")) {
                continue; // listed where it is defined
            }
            let mut item = self.item(&id).clone();
            if item.is_null() {
                continue;
            }
            item["name"] = Value::String(name);
            self.named(&item, &parent);
        }
    }

    pub(crate) fn module(&mut self, id: &Value, path: &str) {
        let items = self.item(id)["inner"]["module"]["items"].clone();
        for child in items.as_array().into_iter().flatten() {
            let item = self.item(child).clone();
            if item["visibility"] != "public" {
                continue;
            }
            self.named(&item, path);
        }
    }

    fn named(&mut self, item: &Value, parent: &str) {
        let inner = &item["inner"];
        let Some((kind, body)) = inner.as_object().and_then(|o| o.iter().next()) else {
            return;
        };
        if kind == "use" {
            let name = body["name"].as_str().unwrap_or("?");
            let source = body["source"].as_str().unwrap_or("?");
            self.lines
                .insert(format!("pub use {parent}::{name} = {source}"));
            self.uses
                .push((parent.to_string(), name.to_string(), body["id"].clone()));
            return;
        }
        let name = item["name"].as_str().unwrap_or("?");
        let path = format!("{parent}::{name}");
        let mark = if non_exhaustive(item) {
            " #[non_exhaustive]"
        } else {
            ""
        };
        match kind.as_str() {
            "module" => {
                self.lines.insert(format!("mod {path}"));
                self.module(&item["id"], &path);
            }
            "function" => {
                let sig = signature(body);
                self.lines.insert(format!("fn {path}{sig}"));
            }
            "struct" => {
                self.lines.insert(format!("struct {path}{mark}"));
                let fields = &body["kind"]["plain"]["fields"];
                self.fields(fields, &path);
                self.impls(&body["impls"], &path);
            }
            "enum" => {
                self.lines.insert(format!("enum {path}{mark}"));
                for variant in body["variants"].as_array().into_iter().flatten() {
                    let v = self.item(variant).clone();
                    let vname = v["name"].as_str().unwrap_or("?");
                    self.lines.insert(format!("variant {path}::{vname}"));
                    let fields = &v["inner"]["variant"]["kind"]["struct"]["fields"];
                    self.fields(fields, &format!("{path}::{vname}"));
                }
                self.impls(&body["impls"], &path);
            }
            "constant" | "assoc_const" => {
                let ty = render(&body["type"]);
                self.lines.insert(format!("const {path}: {ty}"));
            }
            "trait" => {
                self.lines.insert(format!("trait {path}"));
                for it in body["items"].as_array().into_iter().flatten() {
                    let it = self.item(it).clone();
                    self.named(&it, &path);
                }
            }
            other => {
                self.lines.insert(format!("{other} {path}"));
            }
        }
    }

    fn fields(&mut self, fields: &Value, path: &str) {
        for field in fields.as_array().into_iter().flatten() {
            let f = self.item(field).clone();
            if f["visibility"] == "public" || f["visibility"] == "default" {
                let name = f["name"].as_str().unwrap_or("?");
                let ty = render(&f["inner"]["struct_field"]);
                self.lines.insert(format!("field {path}::{name}: {ty}"));
            }
        }
    }

    fn impls(&mut self, impls: &Value, path: &str) {
        for id in impls.as_array().into_iter().flatten() {
            let imp = self.item(id).clone();
            let body = &imp["inner"]["impl"];
            if !body["blanket_impl"].is_null() {
                continue;
            }
            match body["trait"].as_object() {
                Some(tr) => {
                    let name = tr
                        .get("path")
                        .or_else(|| tr.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("?");
                    let name = name.rsplit("::").next().unwrap_or(name);
                    let args = render_args(tr.get("args").unwrap_or(&Value::Null));
                    self.lines.insert(format!("impl {name}{args} for {path}"));
                }
                None => {
                    for it in body["items"].as_array().into_iter().flatten() {
                        let it = self.item(it).clone();
                        if it["visibility"] == "public" {
                            self.named(&it, path);
                        }
                    }
                }
            }
        }
    }
}

fn non_exhaustive(item: &Value) -> bool {
    item["attrs"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|a| a.to_string().contains("non_exhaustive"))
}

fn signature(function: &Value) -> String {
    let sig = &function["sig"];
    let inputs: Vec<String> = sig["inputs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|pair| {
            let name = pair[0].as_str().unwrap_or("_");
            let ty = render(&pair[1]);
            match (name, ty.as_str()) {
                ("self", "Self") => "self".to_owned(),
                ("self", "&Self") => "&self".to_owned(),
                ("self", "&mut Self") => "&mut self".to_owned(),
                _ => format!("{name}: {ty}"),
            }
        })
        .collect();
    let output = &sig["output"];
    let ret = if output.is_null() {
        String::new()
    } else {
        format!(" -> {}", render(output))
    };
    format!("({}){ret}", inputs.join(", "))
}

/// A type in Rust-like text (what the listing needs; unknown shapes print as `_`).
fn render(ty: &Value) -> String {
    let Some((kind, v)) = ty.as_object().and_then(|o| o.iter().next()) else {
        return "_".to_owned();
    };
    match kind.as_str() {
        "primitive" | "generic" => v.as_str().unwrap_or("_").to_owned(),
        "resolved_path" => {
            let path = v["path"].as_str().or(v["name"].as_str()).unwrap_or("_");
            let path = path.rsplit("::").next().unwrap_or(path);
            format!("{path}{}", render_args(&v["args"]))
        }
        "borrowed_ref" => {
            let m = if v["is_mutable"] == true { "mut " } else { "" };
            let lt = v["lifetime"]
                .as_str()
                .map(|l| format!("{l} "))
                .unwrap_or_default();
            format!("&{lt}{m}{}", render(&v["type"]))
        }
        "slice" => format!("[{}]", render(v)),
        "array" => format!(
            "[{}; {}]",
            render(&v["type"]),
            v["len"].as_str().unwrap_or("_")
        ),
        "tuple" => {
            let parts: Vec<String> = v.as_array().into_iter().flatten().map(render).collect();
            format!("({})", parts.join(", "))
        }
        "impl_trait" => {
            let bounds: Vec<String> = v
                .as_array()
                .into_iter()
                .flatten()
                .map(render_bound)
                .collect();
            format!("impl {}", bounds.join(" + "))
        }
        "dyn_trait" => {
            let traits: Vec<String> = v["traits"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| {
                    let p = &t["trait"];
                    let name = p["path"].as_str().or(p["name"].as_str()).unwrap_or("_");
                    let name = name.rsplit("::").next().unwrap_or(name);
                    format!("{name}{}", render_args(&p["args"]))
                })
                .collect();
            format!("dyn {}", traits.join(" + "))
        }
        "qualified_path" => format!(
            "<{}>::{}",
            render(&v["self_type"]),
            v["name"].as_str().unwrap_or("_")
        ),
        _ => "_".to_owned(),
    }
}

fn render_bound(bound: &Value) -> String {
    let p = &bound["trait_bound"]["trait"];
    let name = p["path"].as_str().or(p["name"].as_str()).unwrap_or("_");
    let name = name.rsplit("::").next().unwrap_or(name);
    format!("{name}{}", render_args(&p["args"]))
}

fn render_args(args: &Value) -> String {
    let Some(ab) = args.get("angle_bracketed") else {
        return String::new();
    };
    let mut parts: Vec<String> = ab["args"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| match a.as_object().and_then(|o| o.iter().next()) {
            Some((k, t)) if k == "type" => render(t),
            Some((k, l)) if k == "lifetime" => l.as_str().unwrap_or("'_").to_owned(),
            _ => "_".to_owned(),
        })
        .collect();
    for c in ab["constraints"].as_array().into_iter().flatten() {
        let name = c["name"].as_str().unwrap_or("_");
        let ty = render(&c["binding"]["equality"]["type"]);
        parts.push(format!("{name} = {ty}"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("<{}>", parts.join(", "))
    }
}

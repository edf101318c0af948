//! Self-contained `index.html` pages: tables, preformatted text and inline SVG, one file
//! that opens without a network or any other file.
//!
//! A small inline script counts the tables and the plots the browser actually laid out
//! (non-zero size) and writes the counts into `<body data-rendered-tables=...
//! data-rendered-plots=...>`, with how far the page and the widest table reach beyond the
//! window (`data-overflow-x`, `data-table-overflow-x`, in CSS pixels), which the
//! headless-Chromium tests read back from the DOM.
//!
//! Tables sit in a scroll container and their headers wrap, so a wide table never widens
//! the page; the text columns of a table wrap too (at spaces, hyphens and after the commas
//! of a controller spec), so a replay summary fits 1280 px.

use std::fmt::Write as _;

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// An HTML page being assembled.
#[derive(Debug, Clone, Default)]
pub struct Page {
    title: String,
    body: String,
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;max-width:120em}\
div.scroll{overflow-x:auto;max-width:100%}\
table{border-collapse:collapse;margin:.5em 0 1.5em}\
td,th{border:1px solid #bbb;padding:.2em .5em;text-align:right;white-space:nowrap}\
th{white-space:normal;vertical-align:bottom}\
td.l{white-space:normal;overflow-wrap:break-word}\
h2{font-size:1.15em}th{background:#eee}td.l,th.l{text-align:left}\
figcaption{max-width:60em;font-size:90%}\
pre{background:#f6f6f6;padding:.5em;overflow-x:auto;font-size:85%}\
figure{display:inline-block;margin:.5em}figure svg{max-width:100%;height:auto}\
.thr{color:#2850c8}.hare{color:#c82828}";

const CHECK_SCRIPT: &str = "<script>(function(){function n(s){var c=0;\
document.querySelectorAll(s).forEach(function(e){var r=e.getBoundingClientRect();\
if(r.width>0&&r.height>0)c++;});return c;}\
document.body.setAttribute('data-rendered-tables',n('table'));\
document.body.setAttribute('data-rendered-plots',n('figure svg'));\
var w=document.documentElement.clientWidth,t=0;\
document.querySelectorAll('table').forEach(function(e){\
t=Math.max(t,Math.ceil(e.getBoundingClientRect().right)-w);});\
document.body.setAttribute('data-overflow-x',Math.max(0,document.documentElement.scrollWidth-w));\
document.body.setAttribute('data-table-overflow-x',Math.max(0,t));})();</script>";

impl Page {
    /// An empty page titled `title`.
    pub fn new(title: &str) -> Self {
        Page {
            title: title.to_string(),
            body: format!("<h1>{}</h1>\n", escape(title)),
        }
    }

    /// A section heading.
    pub fn heading(&mut self, text: &str) -> &mut Self {
        let _ = writeln!(self.body, "<h2>{}</h2>", escape(text));
        self
    }

    /// A paragraph of text.
    pub fn para(&mut self, text: &str) -> &mut Self {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
        self
    }

    /// Preformatted text (side-by-side rows, nuttcp lines).
    pub fn pre(&mut self, text: &str) -> &mut Self {
        let _ = writeln!(self.body, "<pre>{}</pre>", escape(text));
        self
    }

    /// A table; the first row is the header. Columns listed in `left` are left-aligned.
    pub fn table(&mut self, rows: &[Vec<String>], left: &[usize]) -> &mut Self {
        let class = |i: usize| {
            if left.contains(&i) {
                " class=\"l\""
            } else {
                ""
            }
        };
        self.body.push_str("<div class=\"scroll\"><table>\n");
        for (ri, r) in rows.iter().enumerate() {
            let tag = if ri == 0 { "th" } else { "td" };
            self.body.push_str("<tr>");
            for (ci, v) in r.iter().enumerate() {
                let mut text = escape(v);
                if left.contains(&ci) {
                    // A break opportunity after each comma of a controller spec
                    // (`cubic@linux-2.6.20,initial_ssthresh=100`) lets its column wrap.
                    text = text.replace(',', ",<wbr>");
                }
                let _ = write!(self.body, "<{tag}{}>{text}</{tag}>", class(ci));
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</table></div>\n");
        self
    }

    /// An SVG document inline (its XML prolog dropped), with a caption.
    pub fn svg(&mut self, svg: &str, caption: &str) -> &mut Self {
        let start = svg.find("<svg").unwrap_or(0);
        let _ = writeln!(
            self.body,
            "<figure>{}<figcaption>{}</figcaption></figure>",
            &svg[start..],
            escape(caption)
        );
        self
    }

    /// The SVG file `svg` inline with `caption`, or its file name when there is none.
    pub fn svg_file(
        &mut self,
        svg: &std::path::Path,
        caption: Option<&str>,
    ) -> anyhow::Result<&mut Self> {
        use anyhow::Context as _;
        let text =
            std::fs::read_to_string(svg).with_context(|| format!("reading {}", svg.display()))?;
        let caption = caption.map_or_else(
            || {
                svg.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            },
            str::to_string,
        );
        Ok(self.svg(&text, &caption))
    }

    /// The whole document.
    pub fn finish(&self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head>\n<body>\n{}{CHECK_SCRIPT}\n</body></html>\n",
            escape(&self.title),
            self.body
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_escapes_and_embeds() {
        let mut p = Page::new("a <b> & c");
        p.table(
            &[vec!["x".into(), "y".into()], vec!["1".into(), "<2>".into()]],
            &[0],
        )
        .svg("<?xml version=\"1.0\"?>\n<svg width=\"1\"></svg>", "plot")
        .pre("a<b");
        let html = p.finish();
        assert!(html.contains("<title>a &lt;b&gt; &amp; c</title>"));
        assert!(html.contains("<td class=\"l\">1</td><td>&lt;2&gt;</td>"));
        assert!(html.contains("<div class=\"scroll\"><table>"));
        assert!(html.contains("<figure><svg width=\"1\"></svg>"));
        assert!(!html.contains("<?xml"));
        assert!(html.contains("<pre>a&lt;b</pre>"));
        assert!(
            !html.contains("http://") || html.contains("xmlns"),
            "no external resources"
        );
    }
}

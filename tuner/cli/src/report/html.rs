//! HTML pieces of the report: escaping, tables, sections, and the page with its inline
//! style (no script, no fonts or images fetched: the page is one self-contained file).

use std::fmt::Write;

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A table: header cells, then rows of cells already escaped (or built from HTML).
pub fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table><thead><tr>");
    for h in head {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>");
    for row in rows {
        s.push_str("<tr>");
        for cell in row {
            let _ = write!(s, "<td>{cell}</td>");
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>\n");
    s
}

/// Two columns of name and value.
pub fn facts(rows: &[(&str, String)]) -> String {
    let mut s = String::from("<table class=\"facts\"><tbody>");
    for (k, v) in rows {
        let _ = write!(s, "<tr><th>{}</th><td>{v}</td></tr>", esc(k));
    }
    s.push_str("</tbody></table>\n");
    s
}

/// A section with an anchor, a heading and its body.
pub fn section(id: &str, title: &str, body: &str) -> String {
    format!(
        "<section id=\"{id}\"><h2>{}</h2>\n{body}</section>\n",
        esc(title)
    )
}

/// A figure holding an inline SVG.
pub fn figure(svg: &str) -> String {
    let svg = svg.trim_start_matches(|c| c != '<');
    format!("<figure>{svg}</figure>\n")
}

pub fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", esc(text))
}

pub fn badge(ok: bool, yes: &str, no: &str) -> String {
    if ok {
        format!("<span class=\"ok\">{}</span>", esc(yes))
    } else {
        format!("<span class=\"bad\">{}</span>", esc(no))
    }
}

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#222;background:#f6f7f9}
header{background:#1f3b57;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:24px}
header p{margin:0;opacity:.85}
nav{padding:8px 28px;background:#e9edf2;font-size:14px;position:sticky;top:0}
nav a{margin-right:14px;color:#1f3b57;text-decoration:none}
main{padding:8px 28px 40px;max-width:1100px}
section{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:4px 18px 14px;margin:16px 0}
h2{font-size:19px;border-bottom:1px solid #e3e7ec;padding-bottom:6px}
h3{font-size:16px;margin:18px 0 6px}
table{border-collapse:collapse;font-size:13px;margin:6px 0 10px}
th,td{border:1px solid #dde2e8;padding:3px 8px;text-align:left;vertical-align:top}
thead th{background:#f0f3f6}
table.facts th{background:#f7f9fb;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:8px 0}
figure svg{max-width:100%;height:auto;border:1px solid #eceff3}
.note{color:#555;font-size:13px}
.ok{color:#116611;font-weight:600}
.bad{color:#b00020;font-weight:600}
ul.reasons{margin:2px 0 0;padding-left:18px;font-size:12px;color:#444}
";

/// The whole page: title, a header line, the navigation and the sections.
pub fn page(title: &str, subtitle: &str, nav: &[(&str, &str)], body: &str) -> String {
    let mut links = String::new();
    for (id, name) in nav {
        let _ = write!(links, "<a href=\"#{id}\">{}</a>", esc(name));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>{STYLE}</style></head>\n<body><header><h1>{t}</h1><p>{s}</p></header>\
         <nav>{links}</nav><main>\n{body}</main></body></html>\n",
        t = esc(title),
        s = esc(subtitle)
    )
}

//! A chart as SVG text: axes (linear or logarithmic), lines with markers, a
//! legend. Only what the benchmark pictures need; no dependency.

use std::fmt::Write;

/// How an axis maps values.
#[derive(Clone, Copy)]
pub enum Scale {
    /// From 0 (or the lowest value) up, evenly.
    Linear,
    /// Powers of ten evenly.
    Log,
}

/// One axis: its title, scale and range.
pub struct Axis {
    pub title: String,
    pub scale: Scale,
    pub min: f64,
    pub max: f64,
}

impl Axis {
    /// An axis fitted to `values`: linear from 0 to a round top, or
    /// logarithmic between the powers of ten around them.
    pub fn fit(title: &str, scale: Scale, values: impl IntoIterator<Item = f64>) -> Axis {
        let (lo, hi) = values
            .into_iter()
            .filter(|v| v.is_finite())
            .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let (min, max) = match scale {
            Scale::Linear => (0.0, nice_above(hi.max(1e-9))),
            Scale::Log => (
                10f64.powf(lo.max(1e-9).log10().floor()),
                10f64.powf(
                    hi.max(1e-9)
                        .log10()
                        .ceil()
                        .max(lo.max(1e-9).log10().floor() + 1.0),
                ),
            ),
        };
        Axis {
            title: title.to_owned(),
            scale,
            min,
            max,
        }
    }

    /// Where `v` falls, 0 to 1.
    fn at(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => (v - self.min) / (self.max - self.min),
            Scale::Log => {
                (v.max(self.min).log10() - self.min.log10()) / (self.max.log10() - self.min.log10())
            }
        }
    }

    /// The ticks: five even steps, or each power of ten.
    fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Linear => (0..=5)
                .map(|i| self.min + (self.max - self.min) * f64::from(i) / 5.0)
                .collect(),
            Scale::Log => {
                let mut t = Vec::new();
                let mut v = self.min;
                while v <= self.max * 1.000_001 {
                    t.push(v);
                    v *= 10.0;
                }
                t
            }
        }
    }
}

/// The smallest of 1, 2, 2.5, 5 × a power of ten at or above `v`.
fn nice_above(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&n| n >= v)
        .unwrap_or(10.0 * p)
}

/// A tick's label: no trailing zeros, thousands with a comma.
fn label(v: f64) -> String {
    if v >= 1000.0 && v.fract() == 0.0 {
        let digits = format!("{v:.0}");
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// One series: its name, colour, points, and whether it is drawn as steps (a
/// distribution) or joined straight with a marker at each point (a hollow one
/// at the indices in `hollow`).
pub struct Series {
    pub name: String,
    pub colour: &'static str,
    pub points: Vec<(f64, f64)>,
    pub hollow: Vec<usize>,
    pub steps: bool,
    pub dashed: bool,
}

/// A chart, and a note under its legend.
pub struct Chart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub note: Option<String>,
}

const W: f64 = 720.0;
/// The plot's height; the legend goes under it.
const H: f64 = 420.0;
const LINE: f64 = 18.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 48.0;
const BOTTOM: f64 = 50.0;

impl Chart {
    /// The SVG document.
    pub fn svg(&self) -> String {
        let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
        let px = |v: f64| LEFT + self.x.at(v) * pw;
        let py = |v: f64| TOP + (1.0 - self.y.at(v)) * ph;
        let legend_lines = self.series.len() + usize::from(self.note.is_some());
        let height = H + LINE * legend_lines as f64 + 8.0;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="{W}" height="{height}" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
            W / 2.0,
            escape(&self.title)
        );
        for t in self.x.ticks() {
            let x = px(t);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#e0e0e0"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                TOP + ph,
                TOP + ph + 16.0,
                label(t)
            );
        }
        for t in self.y.ticks() {
            let y = py(t);
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e0e0e0"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                LEFT + pw,
                LEFT - 6.0,
                y + 4.0,
                label(t)
            );
        }
        let _ = writeln!(
            s,
            r#"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            LEFT + pw / 2.0,
            H - 18.0,
            escape(&self.x.title)
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            TOP + ph / 2.0,
            escape(&self.y.title)
        );
        for series in &self.series {
            let mut path = String::new();
            let mut last: Option<(f64, f64)> = None;
            for &(x, y) in &series.points {
                let (x, y) = (px(x), py(y));
                match last {
                    None => {
                        let _ = write!(path, "M{x:.1},{y:.1}");
                    }
                    Some((_, ly)) if series.steps => {
                        let _ = write!(path, " L{x:.1},{ly:.1} L{x:.1},{y:.1}");
                    }
                    Some(_) => {
                        let _ = write!(path, " L{x:.1},{y:.1}");
                    }
                }
                last = Some((x, y));
            }
            let dash = if series.dashed {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            };
            let _ = writeln!(
                s,
                r#"<path d="{path}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
                series.colour
            );
            if !series.steps {
                for (i, &(x, y)) in series.points.iter().enumerate() {
                    let fill = if series.hollow.contains(&i) {
                        "white"
                    } else {
                        series.colour
                    };
                    let _ = writeln!(
                        s,
                        r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{fill}" stroke="{}" stroke-width="2"/>"#,
                        px(x),
                        py(y),
                        series.colour
                    );
                }
            }
        }
        // The legend, under the plot.
        for (i, series) in self.series.iter().enumerate() {
            let y = H + LINE * i as f64;
            let dash = if series.dashed {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            };
            let _ = writeln!(
                s,
                r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}">{}</text>"#,
                LEFT + 12.0,
                LEFT + 40.0,
                series.colour,
                LEFT + 46.0,
                y + 4.0,
                escape(&series.name)
            );
        }
        if let Some(note) = &self.note {
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-style="italic">{}</text>"#,
                LEFT + 12.0,
                H + LINE * self.series.len() as f64 + 4.0,
                escape(note)
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_round_outwards_and_label_plainly() {
        let lin = Axis::fit("", Scale::Linear, [3.0, 41.0]);
        assert_eq!((lin.min, lin.max), (0.0, 50.0));
        let log = Axis::fit("", Scale::Log, [8.7, 4867.0]);
        assert_eq!((log.min, log.max), (1.0, 10_000.0));
        assert_eq!(log.ticks().len(), 5);
        assert!((log.at(100.0) - 0.5).abs() < 1e-9);
        assert_eq!(label(10_000.0), "10,000");
        assert_eq!(label(2.5), "2.5");
        assert_eq!(label(0.0), "0");
    }
}

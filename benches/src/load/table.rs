//! A plain-text table with aligned columns, and the number formats the report uses.

/// How a column's cells are aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Padded on the right (text).
    Left,
    /// Padded on the left (numbers).
    Right,
}

/// A table: a header row and rows of cells, rendered with two spaces between columns.
#[derive(Debug, Clone, Default)]
pub struct Table {
    columns: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with the given column headers and alignments.
    pub fn new(columns: &[(&str, Align)]) -> Self {
        Self {
            columns: columns.iter().map(|(h, a)| (h.to_string(), *a)).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row; missing cells are empty, extra cells are dropped.
    pub fn push(&mut self, mut row: Vec<String>) {
        row.resize(self.columns.len(), String::new());
        self.rows.push(row);
    }

    /// The table as lines of text (each ends with a newline; no trailing spaces).
    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.columns.iter().map(|(h, _)| h.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let header: Vec<String> = self.columns.iter().map(|(h, _)| h.clone()).collect();
        let mut out = String::new();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (i, ((_, align), cell)) in self.columns.iter().zip(row).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = widths
                    .get(i)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(cell.chars().count());
                match align {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&" ".repeat(pad));
                    }
                    Align::Right => {
                        line.push_str(&" ".repeat(pad));
                        line.push_str(cell);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// A rate or count with thousands separators and one decimal: `12,345.6`.
pub fn rate(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let tenths = (v * 10.0).round() as u64;
    format!("{}.{}", thousands(tenths / 10), tenths % 10)
}

/// An integer with thousands separators: `100,000`.
pub fn thousands(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Milliseconds with a precision that suits their size (`0.412`, `3.41`, `125.4`); `-` for none.
pub fn millis(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v < 1.0 => format!("{v:.3}"),
        Some(v) if v < 100.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.1}"),
    }
}

/// Bytes as MiB with one decimal: `123.4 MiB`.
pub fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_aligned_and_lines_have_no_trailing_spaces() {
        let mut t = Table::new(&[
            ("operation", Align::Left),
            ("ops/s", Align::Right),
            ("note", Align::Left),
        ]);
        t.push(vec!["get".into(), "12.5".into(), String::new()]);
        t.push(vec!["watch fan-out".into(), "1,234.0".into(), "x".into()]);
        assert_eq!(
            t.render(),
            "operation        ops/s  note\n\
             get               12.5\n\
             watch fan-out  1,234.0  x\n"
        );
    }

    #[test]
    fn short_rows_are_padded_and_long_rows_cut() {
        let mut t = Table::new(&[("a", Align::Left), ("b", Align::Right)]);
        t.push(vec!["1".into()]);
        t.push(vec!["2".into(), "3".into(), "dropped".into()]);
        assert_eq!(t.render(), "a  b\n1\n2  3\n");
    }

    #[test]
    fn widths_count_characters_not_bytes() {
        let mut t = Table::new(&[("µs", Align::Right), ("x", Align::Left)]);
        t.push(vec!["1".into(), "y".into()]);
        assert_eq!(t.render(), "µs  x\n 1  y\n");
    }

    #[test]
    fn an_empty_table_is_its_header() {
        let t = Table::new(&[("only", Align::Left)]);
        assert_eq!(t.render(), "only\n");
    }

    #[test]
    fn numbers_are_formatted_for_reading() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(rate(12345.64), "12,345.6");
        assert_eq!(rate(0.04), "0.0");
        assert_eq!(rate(f64::INFINITY), "-");
        assert_eq!(millis(None), "-");
        assert_eq!(millis(Some(0.41234)), "0.412");
        assert_eq!(millis(Some(3.4149)), "3.41");
        assert_eq!(millis(Some(125.44)), "125.4");
        assert_eq!(mebibytes(3 * 1024 * 1024 / 2), "1.5 MiB");
    }
}

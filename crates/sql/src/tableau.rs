//! Results as the Flink SQL client prints them in its tableau mode: a box of right-aligned
//! cells under a header, then `N rows in set`.

use std::fmt;

/// Rows under a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// Rows of cells, each as long as the header.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table of one column.
    pub fn column(name: &str, cells: impl IntoIterator<Item = String>) -> Self {
        Table {
            header: vec![name.to_string()],
            rows: cells.into_iter().map(|c| vec![c]).collect(),
        }
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.rows.is_empty() {
            return f.write_str("Empty set");
        }
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let rule: String = widths
            .iter()
            .map(|w| format!("+{}", "-".repeat(w + 2)))
            .collect::<String>()
            + "+";
        let line = |f: &mut fmt::Formatter<'_>, cells: &[String]| -> fmt::Result {
            for (w, cell) in widths.iter().zip(cells) {
                write!(f, "| {cell:>w$} ")?;
            }
            writeln!(f, "|")
        };
        writeln!(f, "{rule}")?;
        line(f, &self.header)?;
        writeln!(f, "{rule}")?;
        for row in &self.rows {
            line(f, row)?;
        }
        writeln!(f, "{rule}")?;
        match self.rows.len() {
            1 => f.write_str("1 row in set"),
            n => write!(f, "{n} rows in set"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_prints_as_flinks_client_prints_it() {
        let t = Table::column("table name", ["auction".to_string(), "bid".to_string()]);
        assert_eq!(
            t.to_string(),
            "+------------+\n\
             | table name |\n\
             +------------+\n\
             |    auction |\n\
             |        bid |\n\
             +------------+\n\
             2 rows in set"
        );
        assert_eq!(Table::column("x", []).to_string(), "Empty set");
    }
}

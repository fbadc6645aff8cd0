//! Columns as kubectl aligns them: each as wide as its widest cell, three
//! spaces apart, no trailing spaces.

/// `headers` and `rows` as aligned lines, each ending with a newline.
pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let width = |s: &str| s.chars().count();
    let mut widths: Vec<usize> = headers.iter().map(|h| width(h)).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(width(cell)),
                None => widths.push(width(cell)),
            }
        }
    }
    let mut out = String::new();
    let header: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < row.len() {
                let pad = widths[i] - width(cell) + 3;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_three_spaces_apart() {
        let rows = vec![
            vec!["a".to_owned(), "long-holder".to_owned(), "3".to_owned()],
            vec!["much-longer".to_owned(), "h".to_owned(), "12".to_owned()],
        ];
        assert_eq!(
            render(&["NAME", "HOLDER", "TERM"], &rows),
            "NAME          HOLDER        TERM\n\
             a             long-holder   3\n\
             much-longer   h             12\n"
        );
    }

    #[test]
    fn no_trailing_spaces_and_wide_characters_count_once() {
        let rows = vec![vec!["é".to_owned(), String::new()]];
        assert_eq!(render(&["N", "X"], &rows), "N   X\né\n");
        assert_eq!(render(&["ONLY"], &[]), "ONLY\n");
    }
}

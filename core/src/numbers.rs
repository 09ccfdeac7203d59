//! Lists of option numbers as commands carry them (`1-3,5`): compact, so that a button's payload
//! fits the platforms' limits whatever the options say, and bounded when read, so that whatever
//! is typed costs little. Kept apart from the command grammar that uses them.

/// Writes ascending option numbers compactly: runs of three or more as ranges (`1-3,5`).
pub fn numbers_text(numbers: &[usize]) -> String {
    let mut sorted = numbers.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut index = 0;
    while index < sorted.len() {
        let mut end = index;
        while end + 1 < sorted.len() && sorted[end + 1] == sorted[end] + 1 {
            end += 1;
        }
        match end - index {
            0 => parts.push(sorted[index].to_string()),
            1 => parts.push(format!("{},{}", sorted[index], sorted[end])),
            _ => parts.push(format!("{}-{}", sorted[index], sorted[end])),
        }
        index = end + 1;
    }
    parts.join(",")
}

/// Reads what [`numbers_text`] writes. `None` if any part is not a number or range, or the text
/// is longer than any real list (numbers go up to 1000, so the work and memory stay bounded
/// whatever is typed).
pub fn parse_numbers(text: &str) -> Option<Vec<usize>> {
    const MAX: usize = 1000;
    if text.len() > 8 * MAX {
        return None;
    }
    let mut chosen = vec![false; MAX + 1];
    for part in text.split(',').map(str::trim) {
        let (first, last): (usize, usize) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let n = part.parse().ok()?;
                (n, n)
            }
        };
        if first == 0 || first > last || last > MAX {
            return None;
        }
        chosen[first..=last].fill(true);
    }
    Some((1..=MAX).filter(|n| chosen[*n]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compress_and_round_trip() {
        assert_eq!(numbers_text(&[5, 1, 2, 3]), "1-3,5");
        assert_eq!(numbers_text(&[6, 7]), "6,7");
        assert_eq!(parse_numbers("1-3,5").unwrap(), vec![1, 2, 3, 5]);
        assert_eq!(parse_numbers("0"), None);
        assert_eq!(parse_numbers("3-1"), None);
        assert_eq!(parse_numbers("a"), None);
    }
}

//! Dense linear algebra for the 3-parameter fits: small systems only.

/// Solves `a x = b` for a square system of size `n` (row-major `a`) by
/// Gaussian elimination with partial pivoting. `None` when the matrix is
/// singular to working precision.
pub(super) fn solve(a: &[f64], b: &[f64], n: usize) -> Option<Vec<f64>> {
    if a.len() != n * n || b.len() != n {
        return None;
    }
    let mut m = a.to_vec();
    let mut x = b.to_vec();
    let scale = m.iter().fold(0.0_f64, |acc, v| acc.max(v.abs()));
    if scale == 0.0 || !scale.is_finite() {
        return None;
    }
    for col in 0..n {
        let pivot =
            (col..n).max_by(|&i, &j| m[i * n + col].abs().total_cmp(&m[j * n + col].abs()))?;
        if m[pivot * n + col].abs() <= scale * 1e-15 {
            return None;
        }
        if pivot != col {
            for k in 0..n {
                m.swap(col * n + k, pivot * n + k);
            }
            x.swap(col, pivot);
        }
        for row in col + 1..n {
            let factor = m[row * n + col] / m[col * n + col];
            if factor != 0.0 {
                for k in col..n {
                    m[row * n + k] -= factor * m[col * n + k];
                }
                x[row] -= factor * x[col];
            }
        }
    }
    for col in (0..n).rev() {
        let mut sum = x[col];
        for k in col + 1..n {
            sum -= m[col * n + k] * x[k];
        }
        x[col] = sum / m[col * n + col];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// The inverse of a square matrix of size `n` (row-major), by solving for
/// each column of the identity.
pub(super) fn inverse(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut inv = vec![0.0; n * n];
    for col in 0..n {
        let mut e = vec![0.0; n];
        e[col] = 1.0;
        let x = solve(a, &e, n)?;
        for row in 0..n {
            inv[row * n + col] = x[row];
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn solves_a_pivoting_system() {
        // Needs a row swap: the first pivot is zero.
        let a = [0.0, 2.0, 1.0, 1.0, 1.0, 1.0, 2.0, 1.0, 3.0];
        let x = solve(&a, &[5.0, 5.0, 12.0], 3).unwrap();
        for (got, want) in x.iter().zip([1.0, 1.0, 3.0]) {
            assert!((got - want).abs() < 1e-12, "{x:?}");
        }
        let inv = inverse(&[4.0, 7.0, 2.0, 6.0], 2).unwrap();
        for (got, want) in inv.iter().zip([0.6, -0.7, -0.2, 0.4]) {
            assert!((got - want).abs() < 1e-12, "{inv:?}");
        }
        assert!(solve(&[1.0, 2.0, 2.0, 4.0], &[1.0, 2.0], 2).is_none());
    }
}

//! The arithmetic of the analysis of variance: the F distribution's upper tail, least squares
//! by modified Gram-Schmidt, indicator columns of factors and of their interactions. Pure.

pub use crate::analysis::stats::variances::f_sf;

/// Groups `ys` by a key, keeping the first-seen order of keys.
pub fn group<K: PartialEq + Clone>(keys: &[K], ys: &[f64]) -> Vec<(K, Vec<f64>)> {
    let mut out: Vec<(K, Vec<f64>)> = Vec::new();
    for (k, y) in keys.iter().zip(ys) {
        match out.iter_mut().find(|(g, _)| g == k) {
            Some((_, v)) => v.push(*y),
            None => out.push((k.clone(), vec![*y])),
        }
    }
    out
}

/// Least squares of `y` on `cols`: the residual sum of squares and the rank of the columns.
/// Modified Gram-Schmidt, twice per column for accuracy; a column that is (numerically) a
/// combination of earlier ones is dropped, so a configuration with no run costs a degree of
/// freedom instead of failing.
pub fn least_squares(cols: &[Vec<f64>], y: &[f64]) -> (f64, usize) {
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let mut basis: Vec<Vec<f64>> = Vec::new();
    for c in cols {
        let norm0 = dot(c, c).sqrt();
        if norm0 == 0.0 {
            continue;
        }
        let mut v = c.clone();
        for _ in 0..2 {
            for q in &basis {
                let k = dot(q, &v);
                v.iter_mut().zip(q).for_each(|(x, qi)| *x -= k * qi);
            }
        }
        let norm = dot(&v, &v).sqrt();
        if norm > 1e-9 * norm0 {
            v.iter_mut().for_each(|x| *x /= norm);
            basis.push(v);
        }
    }
    let mut r = y.to_vec();
    for q in &basis {
        let k = dot(q, &r);
        r.iter_mut().zip(q).for_each(|(x, qi)| *x -= k * qi);
    }
    (dot(&r, &r), basis.len())
}

/// Indicator columns of a factor (one per level after the first: treatment coding).
pub fn dummies(keys: &[String]) -> Vec<Vec<f64>> {
    let mut levels: Vec<&String> = Vec::new();
    for k in keys {
        if !levels.contains(&k) {
            levels.push(k);
        }
    }
    levels
        .iter()
        .skip(1)
        .map(|l| keys.iter().map(|k| f64::from(u8::from(k == *l))).collect())
        .collect()
}

/// The columns of an interaction: products of the two factors' indicator columns.
pub fn products(a: &[Vec<f64>], b: &[Vec<f64>]) -> Vec<Vec<f64>> {
    a.iter()
        .flat_map(|x| {
            b.iter()
                .map(move |y| x.iter().zip(y).map(|(p, q)| p * q).collect())
        })
        .collect()
}

//! Reference values: Montgomery, *Design and Analysis of Experiments*, Example 4.1 (the
//! vascular graft experiment: 4 extrusion pressures in 6 batches of resin, a randomized
//! complete block design): SS_E = 109.89 on 15 degrees of freedom, MS_E = 7.33, treatment
//! means 92.82, 91.68, 88.92, 85.77 (Table 4.4).

use super::*;

const GRAFT: [[f64; 6]; 4] = [
    [90.3, 89.2, 98.2, 93.9, 87.4, 97.9],
    [92.5, 89.5, 90.6, 94.7, 87.0, 95.8],
    [85.5, 90.8, 89.6, 86.2, 88.0, 93.4],
    [82.5, 89.5, 85.6, 87.4, 78.9, 90.7],
];

fn graft_runs() -> Vec<Run> {
    GRAFT
        .iter()
        .enumerate()
        .flat_map(|(cell, row)| {
            row.iter().enumerate().map(move |(b, y)| Run {
                cell,
                round: b as u32 + 1,
                y: *y,
            })
        })
        .collect()
}

#[test]
fn pooled_error_of_a_complete_block_design_matches_montgomery_example_4_1() {
    let f = fit(&graft_runs(), 4).unwrap();
    assert!(f.blocked);
    assert_eq!(f.df_err, 15.0);
    assert!((f.ms_err - 7.33).abs() < 0.005, "{}", f.ms_err);
    assert!(
        (f.ms_err * 15.0 - 109.89).abs() < 0.01,
        "{}",
        f.ms_err * 15.0
    );
    for (cell, m) in [92.82, 91.68, 88.92, 85.77].iter().enumerate() {
        assert!((f.effect(cell).unwrap() - m).abs() < 0.005, "{cell}");
    }
    // 9100 psi against 8500 psi: -7.05, standard error sqrt(2 MS_E / 6) (Montgomery 4.1.3).
    let e = f.difference(&[0], &[3]).unwrap();
    assert!((e.value + 7.05).abs() < 1e-9, "{}", e.value);
    assert!(
        (e.se - (2.0 * 7.32575 / 6.0_f64).sqrt()).abs() < 1e-6,
        "{}",
        e.se
    );
    assert_eq!(e.df, 15.0);
    assert!(matches!(
        e.design,
        Design::Blocked {
            configurations: 4,
            rounds: 6,
            ..
        }
    ));
}

#[test]
fn averages_of_configurations_are_contrasts_of_the_same_fit() {
    let f = fit(&graft_runs(), 4).unwrap();
    // (8500 + 8700) / 2 against (8900 + 9100) / 2: variance MS_E (4 x 1/4) / 6.
    let e = f.difference(&[0, 1], &[2, 3]).unwrap();
    assert!((e.value - ((88.92 + 85.77) - (92.82 + 91.68)) / 2.0).abs() < 0.01);
    assert!((e.se - (7.32575 / 6.0_f64).sqrt()).abs() < 1e-6, "{}", e.se);
}

#[test]
fn a_missing_run_costs_a_degree_of_freedom_and_keeps_the_blocks() {
    let mut runs = graft_runs();
    runs.remove(0);
    let f = fit(&runs, 4).unwrap();
    assert!(f.blocked);
    assert_eq!(f.df_err, 14.0);
    let e = f.difference(&[0], &[3]).unwrap();
    // Fewer runs of 8500: a wider interval than the complete design's.
    assert!(e.se > (2.0 * 7.32575 / 6.0_f64).sqrt() * 0.9);
    assert!(e.se.is_finite());
}

#[test]
fn one_run_per_configuration_leaves_no_error_to_pool() {
    let runs: Vec<Run> = (0..4)
        .map(|c| Run {
            cell: c,
            round: 1,
            y: c as f64,
        })
        .collect();
    assert!(fit(&runs, 4).is_none());
}

#[test]
fn rounds_that_do_not_connect_the_configurations_are_not_blocks() {
    // Configuration 0 only in rounds 1-2, configuration 1 only in rounds 3-4.
    let runs: Vec<Run> = [(0, 1, 1.0), (0, 2, 1.2), (1, 3, 2.0), (1, 4, 2.3)]
        .iter()
        .map(|&(cell, round, y)| Run { cell, round, y })
        .collect();
    let f = fit(&runs, 2).unwrap();
    assert!(!f.blocked);
    assert_eq!(f.df_err, 2.0);
    let e = f.difference(&[0], &[1]).unwrap();
    assert!((e.value - 1.05).abs() < 1e-12);
}

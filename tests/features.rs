//! The simulation tests (`planner_sim`, `validation_props`) need the `testing`
//! feature, and cargo leaves them out silently without it: this fails instead.

#[cfg(not(feature = "testing"))]
#[test]
fn the_simulation_tests_are_built() {
    panic!("run `cargo test --features testing`: without it the simulation tests are not built");
}

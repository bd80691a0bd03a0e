use super::*;
use serde_json::json;

#[test]
fn placeholder() {
    assert!(Throughput::from_json(&json!({"dest": "h"})).is_ok());
}

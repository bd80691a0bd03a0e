use super::*;
use serde_json::json;

#[test]
fn placeholder() {
    assert!(merge(&json!({})).get("succeeded") == Some(&json!(false)));
}

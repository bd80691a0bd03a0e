//! Analysis: ministat-compatible statistics (`stats`), the decision engine every verdict comes
//! from (`decide`), the effects of a campaign's dimensions (`effects`), ministat's rendering and
//! input (`ministat`). Reports, which read the store, are a layer of their own above.

pub mod decide;
pub mod effects;
pub mod ministat;
pub mod sets;
pub mod stats;

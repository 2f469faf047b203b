//! C ABI (to come).

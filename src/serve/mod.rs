//! `parity serve`: many requests through a serving target, judged per request.

pub mod adapters;

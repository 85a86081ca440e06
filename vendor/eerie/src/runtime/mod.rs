mod base;
mod error;
mod hal;
mod high_level;
mod trace;
mod vm;

pub use error::{RuntimeError, StatusError};
pub use hal::{BufferElement, BufferView, Value};
pub use trace::{TraceFn, TracedBuffer};
pub use high_level::{DeviceInfo, DeviceSpec, Driver, Function, NativeModule, Program, Runtime};

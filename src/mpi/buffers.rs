//! The buffers of one execution as raw pointers with their lengths: one type
//! for what the Rust API checks, the C ABI decodes and the in-place engine
//! reads and writes.

/// The buffers of one execution, as raw pointers: the caller's contract says how
/// far each is valid.
#[derive(Clone, Copy, Debug)]
pub struct Buffers {
    /// This rank's input.
    pub input: *const u8,
    /// Bytes readable at `input`.
    pub input_len: usize,
    /// Where this rank's output goes (equal to `input` in place).
    pub output: *mut u8,
    /// Bytes writable at `output`.
    pub capacity: usize,
}

impl Buffers {
    /// The buffers of an execution: `input_len` bytes readable at `input`,
    /// `capacity` writable at `output`.
    pub fn new(input: *const u8, input_len: usize, output: *mut u8, capacity: usize) -> Buffers {
        Buffers {
            input,
            input_len,
            output,
            capacity,
        }
    }

    /// True when the execution runs in place (one buffer for both).
    pub fn in_place(&self) -> bool {
        std::ptr::eq(self.input, self.output)
    }
}

//! Password hashing and verification, on blocking threads.

//! flashkv lab.

//! The probe: sweeps over a memory system and inference from the curves.

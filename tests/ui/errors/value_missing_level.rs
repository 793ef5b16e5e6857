// The one error is the macro's: the constant still has its type, so its use below is fine.
const VALUE: u64 = memtune::profile_value!(tlb_entries, memory = device);

fn main() {
    let _ = VALUE;
}

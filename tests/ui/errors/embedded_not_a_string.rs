// The one error is the macro's: the constant still has its type, so its use below is fine.
static VALUE: memtune::EmbeddedProfiles = memtune::embedded_profiles!(dir = bad_store);

fn main() {
    let _ = VALUE;
}

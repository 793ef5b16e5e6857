//! `key = value, ...` argument lists and the value forms the macros accept. Every error is
//! spanned at the offending tokens and says what would be accepted.

use memtune_core::plan::stencil::Dtype;
use memtune_core::{size, MemoryKind};
use proc_macro2::{Span, TokenStream, TokenTree};
use syn::{Error, Ident, LitInt, LitStr};

/// One `key = value`.
#[derive(Clone)]
pub struct Arg {
    pub key: Ident,
    pub value: TokenStream,
}

/// A macro's arguments, checked against the keys it knows.
pub struct Args {
    macro_name: &'static str,
    args: Vec<Arg>,
}

impl Args {
    /// Parses `key = value, ...`; a key must be one of `known` and given once.
    pub fn parse(
        input: TokenStream,
        macro_name: &'static str,
        known: &[&str],
    ) -> Result<Args, Error> {
        let mut args: Vec<Arg> = Vec::new();
        let mut tokens = input.into_iter().peekable();
        while let Some(first) = tokens.next() {
            let TokenTree::Ident(key) = first else {
                return Err(Error::new(
                    first.span(),
                    format!(
                        "{macro_name}: expected `key = value`, e.g. {}",
                        example(macro_name)
                    ),
                ));
            };
            match tokens.next() {
                Some(TokenTree::Punct(p)) if p.as_char() == '=' => {}
                _ => {
                    return Err(Error::new(
                        key.span(),
                        format!(
                            "{macro_name}: expected `=` after `{key}`, as in {}",
                            example(macro_name)
                        ),
                    ))
                }
            }
            let mut value = TokenStream::new();
            for t in tokens.by_ref() {
                if matches!(&t, TokenTree::Punct(p) if p.as_char() == ',') {
                    break;
                }
                value.extend([t]);
            }
            if value.is_empty() {
                return Err(Error::new(
                    key.span(),
                    format!("{macro_name}: `{key} =` has no value"),
                ));
            }
            let name = key.to_string();
            if !known.contains(&name.as_str()) {
                return Err(Error::new(
                    key.span(),
                    format!(
                        "{macro_name}: unknown key `{name}`; it takes {}",
                        known.join(", ")
                    ),
                ));
            }
            if args.iter().any(|a| a.key == name) {
                return Err(Error::new(
                    key.span(),
                    format!("{macro_name}: `{name}` is given twice; keep one"),
                ));
            }
            args.push(Arg { key, value });
        }
        Ok(Args { macro_name, args })
    }

    pub fn get(&self, key: &str) -> Option<&Arg> {
        self.args.iter().find(|a| a.key == key)
    }

    /// A required argument; its absence is an error at the macro call.
    pub fn required(&self, key: &str, form: &str) -> Result<&Arg, Error> {
        self.get(key).ok_or_else(|| {
            Error::new(
                Span::call_site(),
                format!(
                    "{}: missing `{key} = {form}`; add it, as in {}",
                    self.macro_name,
                    example(self.macro_name)
                ),
            )
        })
    }

    /// An error at `key`'s value; at the macro call when it was not given (a default).
    pub fn error_at(&self, key: &str, message: String) -> Error {
        match self.get(key) {
            Some(arg) => Error::new_spanned(&arg.value, message),
            None => Error::new(Span::call_site(), message),
        }
    }

    /// The optional `profile = "path"`.
    pub fn profile(&self) -> Result<Option<LitStr>, Error> {
        self.get("profile").map(Arg::string).transpose()
    }
}

/// A call that works, for messages.
fn example(macro_name: &str) -> &'static str {
    match macro_name {
        "sampling_plan!" => "`sampling_plan!(region = 16 GiB, memory = pinned)`",
        "grouping_plan!" => {
            "`grouping_plan!(table = 8 GiB, table_memory = device, input_memory = pinned)`"
        }
        "stencil_plan!" => "`stencil_plan!(dims = 512x512x512, dtype = f32, repeats = 6)`",
        "profile_value!" => "`profile_value!(tlb_reach, memory = pinned, level = 1)`",
        "embedded_profiles!" => "`embedded_profiles!(dir = \".memtune\")`",
        _ => "`profile_stamp!(profile = \"path/to/profile.json\")`",
    }
}

impl Arg {
    fn error(&self, message: String) -> Error {
        Error::new_spanned(&self.value, message)
    }

    fn tokens(&self) -> Vec<TokenTree> {
        self.value.clone().into_iter().collect()
    }

    /// A byte size: `4096`, `16 GiB`, `16GiB`.
    pub fn size(&self) -> Result<u64, Error> {
        let key = &self.key;
        let bad = || {
            self.error(format!(
                "`{key}` is a size: a number of bytes, or a number and a unit ({}), e.g. `16 GiB`",
                size::UNITS
            ))
        };
        let tokens = self.tokens();
        let (lit, unit_token) = match tokens.as_slice() {
            [TokenTree::Literal(l)] => (l, None),
            [TokenTree::Literal(l), TokenTree::Ident(u)] => (l, Some(u)),
            _ => return Err(bad()),
        };
        let lit: LitInt = syn::parse2(TokenTree::Literal(lit.clone()).into()).map_err(|_| bad())?;
        let n: u64 = lit.base10_parse().map_err(|_| bad())?;
        let (unit, span) = match unit_token {
            Some(u) if lit.suffix().is_empty() => (u.to_string(), u.span()),
            Some(_) => return Err(bad()),
            None => (lit.suffix().to_string(), lit.span()),
        };
        if size::unit_shift(&unit).is_none() {
            return Err(Error::new(
                span,
                format!("`{key}`: unknown unit `{unit}`; use {}", size::UNITS),
            ));
        }
        size::bytes(n, &unit).ok_or_else(|| {
            self.error(format!(
                "`{key}` = {n} {unit} does not fit in 64 bits; pass a smaller size"
            ))
        })
    }

    fn ident(&self, what: &str) -> Result<Ident, Error> {
        match self.tokens().as_slice() {
            [TokenTree::Ident(i)] => Ok(i.clone()),
            _ => Err(self.error(format!("`{}` is {what}", self.key))),
        }
    }

    pub fn memory(&self) -> Result<MemoryKind, Error> {
        let ident = self.ident("a memory kind: device, pinned or managed")?;
        ident
            .to_string()
            .parse()
            .map_err(|e: String| Error::new(ident.span(), format!("`{}`: {e}", self.key)))
    }

    pub fn dtype(&self) -> Result<Dtype, Error> {
        let ident = self.ident("a dtype: f32 or f64")?;
        match ident.to_string().as_str() {
            "f32" => Ok(Dtype::F32),
            "f64" => Ok(Dtype::F64),
            other => Err(Error::new(
                ident.span(),
                format!("`{}`: unknown dtype `{other}`; use f32 or f64", self.key),
            )),
        }
    }

    /// A plain integer that fits in 32 bits.
    pub fn u32(&self) -> Result<u32, Error> {
        let key = &self.key;
        let lit: LitInt = syn::parse2(self.value.clone())
            .map_err(|_| self.error(format!("`{key}` is a whole number, e.g. `{key} = 6`")))?;
        if !lit.suffix().is_empty() {
            return Err(self.error(format!(
                "`{key}` is a plain number; drop the `{}` suffix",
                lit.suffix()
            )));
        }
        lit.base10_parse().map_err(|_| {
            self.error(format!(
                "`{key}` must fit in 32 bits (at most {})",
                u32::MAX
            ))
        })
    }

    /// `512x512x512`, `512 x 512 x 512` or `[512, 512, 512]`.
    pub fn dims(&self) -> Result<[u32; 3], Error> {
        let text: String = self
            .value
            .to_string()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let inner = text
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(&text);
        let parts: Vec<&str> = inner.split(['x', ',']).collect();
        let parsed: Option<Vec<u32>> = parts.iter().map(|p| p.parse().ok()).collect();
        match parsed.as_deref() {
            Some(&[x, y, z]) => Ok([x, y, z]),
            _ => Err(self.error(format!(
                "`{}` is the volume's cells along x, y and z: `512x512x512` or `[512, 512, 512]`",
                self.key
            ))),
        }
    }

    pub fn string(&self) -> Result<LitStr, Error> {
        let example = if self.key == "dir" {
            ".memtune"
        } else {
            "profiles/k80.json"
        };
        syn::parse2(self.value.clone()).map_err(|_| {
            self.error(format!(
                "`{}` is a string literal, e.g. `{} = \"{example}\"`",
                self.key, self.key
            ))
        })
    }
}

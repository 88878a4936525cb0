//! The layer map of the design (DESIGN §2) as data: which layer each
//! top-level module is in, which modules each layer may use, and which
//! external crates and std items each layer must not touch.

/// A layer of the design; a module may use modules of the layers
/// [`Layer::may_use`] allows, and always itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// The crate root (`src/lib.rs`): module declarations only.
    Root,
    /// Layer 0: `domain`, `text`.
    Domain,
    /// Layer 1: the pure core.
    Core,
    /// Layer 2: one resource each; they do not use each other.
    Adapter,
    /// Layer 3: the session service.
    Runtime,
    /// Layer 4, the UI building block: Markdown and highlighting, no I/O.
    Render,
    /// Layer 4, the app.
    App,
    /// Layer 5: the binary (`src/main.rs`, `src/cli/`).
    Cli,
}

/// Every top-level module with its layer, planned ones included (a module
/// missing here fails the check, so a new module must be placed first).
pub const LAYERS: &[(&str, Layer)] = &[
    ("domain", Layer::Domain),
    ("text", Layer::Domain),
    ("tokens", Layer::Core),
    ("prompt", Layer::Core),
    ("pipeline", Layer::Core),
    ("prompt_cache", Layer::Core),
    ("compress", Layer::Core),
    ("conversation", Layer::Core),
    ("tooling", Layer::Core),
    ("provider", Layer::Adapter),
    ("store", Layer::Adapter),
    ("workspace", Layer::Adapter),
    ("config", Layer::Adapter),
    ("tools", Layer::Adapter),
    ("mcp", Layer::Adapter),
    ("runtime", Layer::Runtime),
    ("render", Layer::Render),
    ("tui", Layer::App),
    ("cli", Layer::Cli),
];

/// The runtime's items the app may use, as `::`-separated paths from the
/// crate root (a path is allowed when it is one of them or lies under
/// one): the session handle and its ops, the protocol and view types of
/// `service`, and the few view types defined beside the runtime's
/// functions. Everything else of the runtime (its `Runtime` toolbox, the
/// turn driver, the operations) is reached only through the handle.
pub const APP_RUNTIME_DOORS: &[&str] = &[
    "runtime::handle",
    "runtime::service",
    "runtime::cache_report",
    "runtime::tool_costs::ToolServers",
    "runtime::input_history::HistoryEvent",
    "runtime::input_history::HISTORY_CAP",
    "runtime::tool_run::ApprovalAnswer",
    "runtime::attach::AttachConsent",
    "runtime::compress::outcome",
    "runtime::now_ms",
];

/// The name the checker gives the crate root.
pub const ROOT: &str = "lib";

/// The layer of top-level module `name`, `None` when it has none.
pub fn layer_of(name: &str) -> Option<Layer> {
    if name == ROOT {
        return Some(Layer::Root);
    }
    LAYERS.iter().find(|(m, _)| *m == name).map(|(_, l)| *l)
}

impl Layer {
    /// The layer's number in the design: 0 domain … 5 the binary (the
    /// crate root counts as 0).
    pub fn number(self) -> u8 {
        match self {
            Layer::Root | Layer::Domain => 0,
            Layer::Core => 1,
            Layer::Adapter => 2,
            Layer::Runtime => 3,
            Layer::Render | Layer::App => 4,
            Layer::Cli => 5,
        }
    }

    /// Whether a module of this layer may use a module of layer `to`
    /// (a module may always use itself; the caller checks that first).
    pub fn may_use(self, to: Layer) -> bool {
        use Layer::*;
        match self {
            Root | Cli => true,
            Domain => matches!(to, Domain),
            Core | Adapter | Render => matches!(to, Domain | Core),
            Runtime => matches!(to, Domain | Core | Adapter),
            App => matches!(to, Domain | Core | Runtime | Render),
        }
    }

    /// External paths this layer must not use, each as `::`-separated
    /// segments; a path is denied when it starts with one of them.
    pub fn denied(self) -> &'static [&'static str] {
        match self {
            Layer::Domain | Layer::Core => CORE_DENIED,
            Layer::Render => RENDER_DENIED,
            Layer::Adapter | Layer::Runtime => TERMINAL_UI,
            Layer::Root | Layer::App | Layer::Cli => &[],
        }
    }
}

/// I/O, processes, the environment, clocks, UI and adapter crates: none of
/// them in layers 0 and 1 (time is passed in).
const CORE_DENIED: &[&str] = &[
    "tokio",
    "reqwest",
    "rusqlite",
    "rusqlite_migration",
    "notify",
    "notify_debouncer_full",
    "ratatui",
    "crossterm",
    "ratatui_textarea",
    "syntect",
    "llama_cpp_2",
    "dirs",
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "std::io::stdin",
    "std::io::stdout",
    "std::io::stderr",
    "std::thread::sleep",
    "std::time::SystemTime::now",
    "std::time::Instant::now",
    "jiff::Timestamp::now",
    "jiff::Zoned::now",
    "std::println",
    "std::eprintln",
    "std::print",
    "std::eprint",
];

/// `render` draws with ratatui and highlights with syntect, and does no
/// I/O: no async runtime, network, database, watcher, terminal or model.
const RENDER_DENIED: &[&str] = &[
    "tokio",
    "reqwest",
    "rusqlite",
    "rusqlite_migration",
    "notify",
    "notify_debouncer_full",
    "crossterm",
    "ratatui_textarea",
    "llama_cpp_2",
    "dirs",
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "std::io::stdin",
    "std::io::stdout",
    "std::io::stderr",
    "std::println",
    "std::eprintln",
    "std::print",
    "std::eprint",
];

/// Adapters and the runtime do not draw.
const TERMINAL_UI: &[&str] = &["ratatui", "crossterm", "ratatui_textarea"];

/// Macros that print; a bare `println!` is `std::println`.
pub const PRINT_MACROS: &[&str] = &["println", "eprintln", "print", "eprint"];

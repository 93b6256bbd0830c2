//! What a kind of fault strikes with: the schedule's primitives, as the kinds see them.
//!
//! Each kind writes its strike over [`Strike`] (a pause freezes its targets for a while, a
//! partition cuts the links between its groups …); the fault schedule (`crate::schedule`)
//! implements it once for both modes, with the composition of overlapping faults, over
//! its `Backend`. The kinds thus know nothing of the schedule, and the schedule, which
//! reads scenarios, imports them without a circle.

/// A directed link between two nodes: (from, to).
pub type Link = (String, String);

/// What fails in a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The process is killed (SIGKILL, OOM, a panic): the OS keeps what it wrote.
    Process,
    /// The machine fails (power cut, kernel panic): the page cache is lost too.
    Machine,
}

/// What a latency or loss fault does to the messages it reaches.
#[derive(Debug, Clone, Copy)]
pub enum Degradation {
    /// Extra one-way latency, uniform in `[min, max]` ms.
    Latency([u64; 2]),
    /// This fraction of packets lost (and resent).
    Loss(f64),
}

impl Degradation {
    /// How the history names it.
    pub fn describe(self) -> String {
        match self {
            Degradation::Latency([min, max]) => format!("latency +{min}..{max} ms"),
            Degradation::Loss(rate) => format!("packet loss {:.1}%", rate * 100.0),
        }
    }
}

/// The messages a latency or loss fault reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Those sent over these links.
    Links(Vec<Link>),
    /// Every message these nodes write.
    Nodes(Vec<String>),
    /// Every message of the network.
    Everywhere,
}

impl Scope {
    /// The scope of a fault with these targets and groups: the links between the groups,
    /// else the targets' writes, else everything.
    pub fn of(targets: Vec<String>, groups: Option<Vec<Vec<String>>>, one_way: bool) -> Scope {
        match (groups, targets.is_empty()) {
            (Some(groups), _) => Scope::Links(links_between(&groups, one_way)),
            (None, true) => Scope::Everywhere,
            (None, false) => Scope::Nodes(targets),
        }
    }

    /// How the history names it.
    pub fn describe(&self) -> String {
        match self {
            Scope::Links(links) => {
                let shown: Vec<String> = links.iter().map(|(a, b)| format!("{a}->{b}")).collect();
                format!("on {}", shown.join(","))
            }
            Scope::Everywhere => "on every message".to_string(),
            Scope::Nodes(nodes) => format!("on writes of {}", nodes.join(",")),
        }
    }
}

/// The (from, to) node pairs between the groups: every pair across two groups, or only
/// from the first group to the others when `one_way`.
pub fn links_between(groups: &[Vec<String>], one_way: bool) -> Vec<Link> {
    let mut links = Vec::new();
    for (i, from) in groups.iter().enumerate() {
        for (j, to) in groups.iter().enumerate() {
            if i != j && (!one_way || i == 0) {
                links.extend(
                    from.iter()
                        .flat_map(|a| to.iter().map(move |b| (a.clone(), b.clone()))),
                );
            }
        }
    }
    links
}

/// The schedule's primitives: each strikes on resolved nodes or links, records the fault
/// in the history, and, given a duration, waits it out and undoes what no other fault
/// still covers.
pub trait Strike {
    /// Freezes every target for `duration_ms`.
    fn pause(&self, targets: &[String], duration_ms: u64) -> impl Future<Output = ()>;
    /// Kills every target; restarts each after `restart_after_ms` if given (0: at once).
    fn crash(
        &self,
        failure: Failure,
        targets: &[String],
        restart_after_ms: Option<u64>,
    ) -> impl Future<Output = Result<(), String>>;
    /// Steps every target's wall clock by `by_ms`.
    fn jump(&self, targets: &[String], by_ms: i64) -> Result<(), String>;
    /// Makes every target's clock run at `rate_ppm`, for `duration_ms` if given.
    fn drift(
        &self,
        targets: &[String],
        rate_ppm: i64,
        duration_ms: Option<u64>,
    ) -> impl Future<Output = Result<(), String>>;
    /// Cuts `links` under the fault `description`, for `duration_ms` if given.
    fn cut(&self, links: &[Link], description: &str, duration_ms: Option<u64>) -> impl Future<Output = ()>;
    /// Mends every link that cuts hold.
    fn heal(&self);
    /// The current master of the group `node` belongs to.
    fn master_of(&self, node: &str) -> Option<String>;
    /// Degrades the messages in `scope`, for `duration_ms` if given.
    fn degrade(
        &self,
        degradation: Degradation,
        scope: Scope,
        duration_ms: Option<u64>,
    ) -> impl Future<Output = Result<(), String>>;
    /// Closes every TCP connection of the targets.
    fn reset(&self, targets: &[String]);
}

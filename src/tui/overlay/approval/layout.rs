//! How the approval overlay shares its rows: the call's detail (the
//! command or the diff) comes before every optional part. A pure function
//! of row counts; the overlay measures its parts and draws the plan.

/// Rows a detail that does not fit gets at least before the optional parts
/// shrink (on a tall overlay: half of its rows).
const ENOUGH: usize = 2;

/// How much of the warning shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Warning {
    /// All of it, wrapped.
    Full,
    /// One line.
    Line,
}

/// One way of sharing the rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Level {
    /// The call's row (its name and summary).
    pub title: bool,
    /// How much of the warning shows.
    pub warning: Warning,
    /// Blank rows: one under the head, a second above the choices.
    pub blanks: usize,
    /// The detail's heading.
    pub heading: bool,
    /// The choices on one line.
    pub compact: bool,
}

const fn level(title: bool, warning: Warning, blanks: usize, heading: bool, compact: bool) -> Level {
    Level {
        title,
        warning,
        blanks,
        heading,
        compact,
    }
}

/// The ways of sharing the rows, from the most generous to the most
/// compact: each gives up one more optional part (the blank rows, then
/// the choices' rows, the warning's, the call's row and the heading).
const LEVELS: [Level; 7] = [
    level(true, Warning::Full, 2, true, false),
    level(true, Warning::Full, 1, true, false),
    level(true, Warning::Full, 0, true, false),
    level(true, Warning::Full, 0, true, true),
    level(true, Warning::Line, 0, true, true),
    level(false, Warning::Line, 0, true, true),
    level(false, Warning::Line, 0, false, true),
];

/// The rows of the parts at full size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Rows {
    /// The whole detail.
    pub detail: usize,
    /// The whole warning (0: the call has none).
    pub warning: usize,
    /// The choices, or the reason being typed (one row when compact).
    pub choices: usize,
}

/// How the parts share the rows inside the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    /// What else shows.
    pub level: Level,
    /// Rows of the detail's window.
    pub detail: usize,
    /// Whether the detail goes on beyond its window (a hint row follows it).
    pub hint: bool,
}

/// The plan for `height` rows: the first level that shows all of the
/// detail, else the first that gives it half of the rows (at least
/// [`ENOUGH`]) and a hint row, else the one that gives it the most. `None`
/// when not one row of it and the hint fit.
pub(super) fn plan(rows: Rows, height: usize) -> Option<Plan> {
    let room = |level: &Level| {
        let warning = match level.warning {
            Warning::Full => rows.warning,
            Warning::Line => rows.warning.min(1),
        };
        let choices = if level.compact { 1 } else { rows.choices };
        let fixed = usize::from(level.title) + warning + level.blanks + usize::from(level.heading) + choices;
        height.checked_sub(fixed)
    };
    if let Some(level) = LEVELS.iter().find(|l| room(l).is_some_and(|r| r >= rows.detail)) {
        return Some(Plan {
            level: *level,
            detail: rows.detail,
            hint: false,
        });
    }
    // One row of the room is the hint's.
    let partial = LEVELS.iter().filter_map(|l| {
        room(l).filter(|r| *r >= 2).map(|r| Plan {
            level: *l,
            detail: r - 1,
            hint: true,
        })
    });
    let enough = ENOUGH.max(height / 2);
    let first = partial.clone().find(|p| p.detail >= enough);
    first.or_else(|| partial.max_by_key(|p| p.detail))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHELL: Rows = Rows {
        detail: 2,
        warning: 4,
        choices: 3,
    };

    #[test]
    fn a_detail_that_fits_keeps_everything_else() {
        let p = plan(SHELL, 20).unwrap();
        assert_eq!((p.level, p.detail, p.hint), (LEVELS[0], 2, false));
        // One row short: a blank row goes first.
        assert_eq!(plan(SHELL, 12).unwrap().level, LEVELS[1]);
    }

    #[test]
    fn the_optional_parts_give_way_until_the_detail_fits() {
        // 10 rows: the choices go to one line, the warning stays whole.
        let p = plan(SHELL, 10).unwrap();
        assert_eq!((p.level, p.detail, p.hint), (LEVELS[3], 2, false));
        // 4 rows: a line of warning, the command, the choices.
        let p = plan(SHELL, 4).unwrap();
        assert!(!p.level.title && p.level.warning == Warning::Line && !p.level.heading);
        assert_eq!((p.detail, p.hint), (2, false));
    }

    #[test]
    fn a_long_detail_gets_half_the_rows_and_a_hint() {
        let diff = Rows {
            detail: 40,
            warning: 1,
            choices: 3,
        };
        // 18 rows: all the parts stay, the diff gets 9 rows and the hint.
        let p = plan(diff, 18).unwrap();
        assert_eq!((p.level, p.detail, p.hint), (LEVELS[0], 9, true));
        // 10 rows: parts give way until the diff has 5 (the warning is one
        // line already).
        let p = plan(diff, 10).unwrap();
        assert_eq!((p.level, p.detail, p.hint), (LEVELS[3], 5, true));
        // 4 rows: the most it can have, one row.
        let p = plan(diff, 4).unwrap();
        assert_eq!((p.level, p.detail, p.hint), (LEVELS[6], 1, true));
    }

    #[test]
    fn without_a_row_for_the_detail_and_its_hint_there_is_no_plan() {
        assert_eq!(plan(SHELL, 3), None);
        assert_eq!(plan(SHELL, 0), None);
        let one = Rows {
            detail: 1,
            warning: 0,
            choices: 3,
        };
        assert_eq!(plan(one, 2).map(|p| p.detail), Some(1));
        assert_eq!(plan(one, 1), None);
    }
}

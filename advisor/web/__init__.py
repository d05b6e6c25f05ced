"""Browser pages: planner, saved scenarios, compare, share links, calibrations."""

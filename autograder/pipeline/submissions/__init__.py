"""A class's submissions as handed in: folders in nbgrader's layout, LMS downloads, zips."""

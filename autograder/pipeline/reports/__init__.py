"""What people read: each student's feedback page, the class report, the terminal's table."""

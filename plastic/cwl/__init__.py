"""Reading annotated CWL through cwltool's loader."""

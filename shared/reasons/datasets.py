"""Datasets (services/api/datasets.py) and the images their rows hold (issue 17, shared/data/images.py)."""

from __future__ import annotations

import json


def image_row_too_long(*, line: int | None, tokens: int, max_length: int) -> str:
    """Issue 17: an SFT row with images longer than maxSeqLength (such a row is never cut)."""
    return (f"dataset line {line}: the row is {tokens} tokens with its images, longer than maxSeqLength "
            f"{max_length}; a row with images is never cut, since an image would lose its tokens")


def request_part_refused(where: str, problem: str) -> str:
    """Issue 17: a chat request's content part an image-text model cannot read, e.g.
    `messages[0].content[1].image_url.url is not valid base64`."""
    return f"{where} {problem}"


def image_file_unknown(name: str, uploaded: list[str]) -> str:
    """Issue 17: an image part naming a file the upload does not hold (`uploaded`: the names it holds)."""
    held = ", ".join(uploaded[:5]) + (f" and {len(uploaded) - 5} more" if len(uploaded) > 5 else "")
    return f"names image file {name}, which was not uploaded with the rows" + (f" (uploaded: {held})" if held else "")


def image_file_refused(name: str, problem: str) -> str:
    """Issue 17: an image part naming an uploaded file that is not an image a row may hold."""
    return f"names image file {name}, which {problem}"


def image_files_unnamed(names: list[str]) -> str:
    listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"image files no row names: {listed}; a row names a file by its name as an image part's url"


def image_files_too_many(count: int, most: int) -> str:
    return f"the upload holds {count} image files; the most is {most}"


def image_file_name_refused(name: str, most: int) -> str:
    return (f"image file name {json.dumps(name[:most + 1])} is refused: a name is 1 to {most} characters "
            "and does not start with `data:`")


def image_file_twice(name: str) -> str:
    return f"two image files are named {name}; each file needs a name of its own"


def dataset_with_images_too_large(size: int, most: int) -> str:
    return f"the rows with their images written in are {size} bytes; the most is {most}"


def dataset_deleted(dataset_id: str, deleted_at: str) -> str:
    return f"dataset {dataset_id} was deleted at {deleted_at}; upload its rows again to use them"


def dataset_name_ambiguous(name: str, ids: list[str]) -> str:
    """A run or evaluation names its dataset by a name several live datasets have (issue 30)."""
    return f"{len(ids)} datasets are named {name} ({', '.join(ids)}); name the one to use by its id"


def dataset_in_use(dataset_id: str, users: list[tuple[str, str, str]]) -> str:
    """users: (kind, id, status) of the runs and evaluations that still read the dataset's rows."""
    shown = ", ".join(f"{kind} {rid} ({status})" for kind, rid, status in users[:3])
    more = f" and {len(users) - 3} more" if len(users) > 3 else ""
    return (f"dataset {dataset_id} is still read by {shown}{more}; delete it once they have ended "
            "(a PAUSED run reads it again when it resumes)")


# --- Rows an engine cannot train on (services/trainer_worker/engines/sft.py, grpo.py).

def dataset_line_without_prompt(line: int) -> str:
    return f"dataset line {line} has no prompt"


def dataset_line_without_question(line: int) -> str:
    """A chat row for a grpo run whose messages hold nothing before the answer."""
    return f"dataset line {line} has no messages before its answer"


def dataset_line_not_sft(line: int) -> str:
    return f"dataset line {line} has neither messages nor prompt and completion"


DATASET_EMPTY = "the dataset has no rows"
DATASET_FORMATS_MIXED = "the dataset mixes messages rows with prompt and completion rows"


# --- Images in chat messages (shared/data/images.py): the problem with an image part, said after the
# field it is in (`messages[0].content[1].image_url.url is not valid base64`).

IMAGE_NOT_A_DATA_URL = "must be a data: URL of an image (data:image/png;base64,...)"
IMAGE_URL_NOT_FETCHED = "must be a data: URL of an image (data:image/png;base64,...); other URLs are not fetched"
IMAGE_NOT_BASE64 = "is not valid base64"
IMAGE_NOT_DECODABLE = "is not an image Pillow can decode"


def image_media_type_refused(media: str, media_types: list[str]) -> str:
    return f"is a {media} data: URL; images are {', '.join(media_types)}"


def image_too_large(most: int) -> str:
    return f"holds an image larger than {most} bytes"


def image_file_too_large(most: int) -> str:
    """An uploaded image file past the bytes an image may have."""
    return f"is larger than {most} bytes"


def image_too_many_pixels(width: int, height: int, most: int) -> str:
    return f"is an image of {width}x{height} pixels; the most is {most} pixels"


def image_format_refused(image_format: str | None, media_types: list[str]) -> str:
    return f"is a {image_format} image; images are {', '.join(media_types)}"


# --- Dataset files as shared/data/datasets.py reads them.

def dataset_not_utf8(byte: int) -> str:
    return f"the dataset is not UTF-8 text (byte {byte})"


def dataset_line_refused(line: int, field: str | None, problem: str) -> str:
    """A line of a dataset file (`field`: where in its row, None for the line as a whole)."""
    where = "" if field is None else f", field {field},"
    return f"dataset line {line}{where} {problem}"


def dataset_upload_refused(line: int, field: str, problem: str, more: int) -> str:
    """An uploaded dataset's first fault, and how many more it has (the details list them)."""
    return f"dataset line {line}, field {field}: {problem}" + (f" (and {more} more)" if more else "")


DATASET_UPLOAD_WITHOUT_FILE = "upload the JSONL as the multipart form field `file`"
DATASET_DELETED_BY_USER = "deleted by the user"


def dataset_preview_limit_invalid(most: int) -> str:
    """Issue 30: `GET /v1/datasets/ID/rows?limit=` (the dashboard's preview) out of its bounds."""
    return f"limit must be a whole number from 1 to {most}"


# --- Alpaca and ShareGPT rows (shared/data/formats.py), read as chat rows (issue 30): the
# problem with a field, said after the field (`conversations[2].from must be one of ...`).

ALPACA_INSTRUCTION_REFUSED = "must be a non-empty string (an Alpaca row's instruction)"
ALPACA_TEXT_REFUSED = "must be a string"
ALPACA_HISTORY_REFUSED = "must be a list of [instruction, answer] pairs of strings"
SHAREGPT_CONVERSATIONS_REFUSED = "must be a non-empty list of {from, value} objects (a ShareGPT row)"
SHAREGPT_TURN_REFUSED = "must be an object with from and value"
SHAREGPT_VALUE_REFUSED = "must be a string"
SHAREGPT_LAST_TURN_REFUSED = "must end with a gpt (assistant) turn to train on"


def sharegpt_role_refused(speakers: list[str]) -> str:
    return f"must be one of {', '.join(speakers)}"


def dataset_row_format_unknown(keys: list[str]) -> str:
    """A row in no format the trainer reads: which are, and how the two common others are read."""
    found = f" (it has {', '.join(keys[:6])}{' ...' if len(keys) > 6 else ''})" if keys else ""
    return ("needs messages (chat), prompt and completion, or prompt; Alpaca rows (instruction, input, "
            "output) and ShareGPT rows (conversations of {from, value}) are read as chat rows" + found)

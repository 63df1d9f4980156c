"""Secret-named settings written in more of the syntaxes code uses: more assignment operators, typed
declarations, and XML elements pretty-printed with their text on a line of its own."""

from __future__ import annotations

import pytest
from test_privacy_vendor_names import _found

ASSIGNMENTS = [
    # GNU make's ::= and :::=, PHP's .=, Go's and TypeScript's typed declarations (values drawn here)
    'DEPLOY_TOKEN ::= "q8Zt3vLx9PmR2wKd7sYb"',
    'DEPLOY_TOKEN :::= "q8Zt3vLx9PmR2wKd7sYb"',
    '$deployToken .= "q8Zt3vLx9PmR2wKd7sYb";',
    'var deployToken string = "q8Zt3vLx9PmR2wKd7sYb"',
    'const apiKey: string = "q8Zt3vLx9PmR2wKd7sYb";',
]

ASSIGNMENT_LOOK_ALIKES = [
    'token: string = "the refresh job"',
    'var tokenKind string = "bearer"',
    '$tokenName .= "_suffix";',
    'TOKEN_FILE ::= "/run/secrets/deploy_token"',
]

ELEMENTS = [
    "<settings>\n  <password>\n    Tq7#vLm29xKa\n  </password>\n</settings>",
    "<deployToken>\r\n    q8Zt3vLx9PmR2wKd7sYb\r\n</deployToken>",
]

ELEMENT_LOOK_ALIKES = [
    "<password>\n    ${env.DEPLOY_PASSWORD}\n</password>",
    "<apiKey>\n    API_KEY\n</apiKey>",
]


@pytest.mark.parametrize("text", ASSIGNMENTS)
def test_a_literal_given_by_more_assignment_operators_and_typed_declarations_is_found(text: str) -> None:
    assert "secret-assignment-quoted" in _found(text)


@pytest.mark.parametrize("text", ELEMENTS)
def test_a_secret_element_pretty_printed_over_three_lines_is_found(text: str) -> None:
    assert "markup-secret-element" in _found(text)


@pytest.mark.parametrize("text", ASSIGNMENT_LOOK_ALIKES + ELEMENT_LOOK_ALIKES)
def test_words_references_and_fillers_in_those_shapes_are_not_flagged(text: str) -> None:
    assert _found(text) == set()


def test_text_a_blank_line_away_from_the_tag_is_not_read_as_the_element_text() -> None:
    # the random run is still a random token; only the element reading stops at one line break
    found = _found("<token>\n\n    q8Zt3vLx9PmR2wKd7sYb\n</token>")
    assert "markup-secret-element" not in found and "random-token" in found

"""The `field` tag (console/web/templatetags/console.py): one field's markup, linked for screen readers."""

from django import forms
from django.template import engines

from tests.web.html_check import problems


class Form(forms.Form):
    name = forms.CharField(max_length=5, help_text="Five letters at most.")
    colour = forms.ChoiceField(choices=[("r", "Red"), ("g", "Green")], widget=forms.RadioSelect)
    notify = forms.BooleanField(required=False, label="Notify me")
    note = forms.CharField(required=False, widget=forms.TextInput(attrs={"aria-describedby": "elsewhere"}))


def draw(template: str, form: forms.Form) -> str:
    return engines["django"].from_string(template).render({"form": form})


def test_it_links_the_help_and_the_errors_to_the_input():
    html = draw("{% field form.name %}", Form({"name": "toolong"}))
    assert html.strip().startswith('<div class="field field--error">')
    assert 'aria-describedby="id_name_helptext id_name_error"' in html
    assert 'aria-invalid="true"' in html
    assert '<div class="help" id="id_name_helptext">Five letters at most.</div>' in html
    assert '<ul class="errorlist" id="id_name_error"><li>' in html
    assert problems(f"<form>{html}</form>") == []


def test_it_draws_a_valid_field_without_errors_or_help():
    html = draw('{% field form.note label="A note" optional=True %}', Form())
    assert '<label for="id_note">A note <span class="muted">(optional)</span></label>' in html
    assert 'aria-describedby="elsewhere"' in html  # what the form set itself is kept
    assert "aria-invalid" not in html and "errorlist" not in html


def test_it_names_a_group_of_choices_by_its_heading():
    html = draw("{% field form.colour required_mark=True %}", Form({"colour": "blue"}))
    assert 'role="group" aria-labelledby="id_colour_label" aria-describedby="id_colour_error"' in html
    assert '<span class="label" id="id_colour_label">Colour <abbr title="required">*</abbr></span>' in html
    assert problems(f'<form><span id="elsewhere"></span>{html}</form>') == []


def test_it_puts_a_checkbox_inside_its_label():
    html = draw("{% field form.notify %}", Form())
    assert '<label class="check" for="id_notify"><input type="checkbox" name="notify"' in html
    assert html.count("Notify me") == 1


def test_it_draws_nothing_for_a_form_the_render_does_not_have():
    assert draw("{% field missing.name %}", Form()).strip() == ""

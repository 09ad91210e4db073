// One labelled text input with its button, the form most tabs open with.
import { Button, Form, FormGroup, InputGroup, InputGroupItem, TextInput } from '@patternfly/react-core';
import type { ReactNode } from 'react';

/** One text field and its submit button in a form (a search bar, a namespace picker, a name to save). */
export function InputForm({
  id,
  label,
  value,
  onChange,
  onSubmit,
  button,
  buttonId,
  secondary = false,
  disabled = false,
  placeholder,
  children,
}: {
  id: string;
  label: string;
  value: string;
  onChange(value: string): void;
  onSubmit(): void;
  button: string;
  buttonId?: string;
  secondary?: boolean;
  disabled?: boolean;
  placeholder?: string;
  /** Shown under the field (e.g. suggestions). */
  children?: ReactNode;
}) {
  return (
    <Form
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit();
      }}
    >
      <FormGroup label={label} fieldId={id}>
        <InputGroup>
          <InputGroupItem isFill>
            <TextInput
              id={id}
              value={value}
              onChange={(_e, v) => onChange(v)}
              {...(placeholder ? { placeholder } : {})}
            />
          </InputGroupItem>
          <InputGroupItem>
            <Button
              type="submit"
              variant={secondary ? 'secondary' : 'primary'}
              isDisabled={disabled}
              {...(buttonId ? { id: buttonId } : {})}
            >
              {button}
            </Button>
          </InputGroupItem>
        </InputGroup>
        {children}
      </FormGroup>
    </Form>
  );
}
